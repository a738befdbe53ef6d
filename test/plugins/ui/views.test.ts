/**
 * `keel ui`'s event lines: what the activity pane prints for each gateway event.
 */
import { describe, expect, it } from 'vitest';
import { describeEvent, wrap } from '../../../plugins/ui/src/views.js';

describe('keel ui event lines', () => {
  it('names each action event with its id and what changed, including an edit amending a waiting action', () => {
    const at = { ts: '2026-11-26T10:00:00.000Z', actionId: 'act_1' };
    expect(describeEvent('action.queued', { ...at, priority: 7, source: 'chatC', task: 'deploy to stagng' })).toMatch(
      /act_1 queued \(P7, chatC\): deploy to stagng$/,
    );
    expect(describeEvent('action.amended', { ...at, task: 'deploy to staging' })).toMatch(
      /act_1 edited before it started: deploy to staging$/,
    );
    expect(describeEvent('action.started', { ...at, task: 'deploy to staging' })).toMatch(/act_1 started: deploy to staging$/);
    expect(describeEvent('no.such.event', at)).toBeUndefined();
  });

  it('says which machine an event relayed from another machine comes from', () => {
    const line = describeEvent('action.started', { actionId: 'act_1', task: 'deploy', host: 'runner-b' });
    expect(line).toMatch(/^\d\d:\d\d:\d\d @runner-b act_1 started: deploy$/);
    expect(describeEvent('action.started', { actionId: 'act_1', task: 'deploy' })).not.toMatch(/@/);
  });

  it('wraps text between words to the width; a word longer than a line is cut', () => {
    expect(wrap('providerA refused the credentials: check providerAApiKey', 20)).toEqual([
      'providerA refused',
      'the credentials:',
      'check',
      'providerAApiKey',
    ]);
    expect(wrap('abcdefghij klm', 4)).toEqual(['abcd', 'efgh', 'ij', 'klm']);
    expect(wrap('', 10)).toEqual([]);
    for (const l of wrap('a '.repeat(100), 7)) expect(l.length).toBeLessThanOrEqual(7);
  });
});
