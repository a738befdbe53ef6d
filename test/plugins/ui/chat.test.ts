/**
 * keel ui's chat: a task's answer is shown whether its end arrives after the POST answered with the task id or, with
 * a fast model, before it; events of other tasks are not the chat's.
 */
import { describe, expect, it } from 'vitest';
import { ChatTracker } from '../../../plugins/ui/src/chat.js';

describe('ChatTracker', () => {
  it('an answer arriving after the task id: thoughts and the answer are the chat lines', () => {
    const t = new ChatTracker();
    expect(t.sent('act_1')).toBeUndefined();
    expect(t.event('thinking', { actionId: 'act_1', thought: 'looking' })).toEqual({ who: 'thinking', text: 'looking' });
    expect(t.event('action.completed', { actionId: 'act_1', result: 'Paris.' })).toEqual({ who: 'agent', text: 'Paris.' });
    // Once only.
    expect(t.event('action.completed', { actionId: 'act_1', result: 'Paris.' })).toBeUndefined();
  });

  it('an answer arriving before the POST answered is shown when the id comes back', () => {
    const t = new ChatTracker();
    expect(t.event('action.completed', { actionId: 'act_2', result: 'Hello from Keel.' })).toBeUndefined();
    expect(t.sent('act_2')).toEqual({ who: 'agent', text: 'Hello from Keel.' });
    expect(t.event('action.failed', { actionId: 'act_3', error: 'no model' })).toBeUndefined();
    expect(t.sent('act_3')).toEqual({ who: 'error', text: 'no model' });
  });

  it("other tasks' events are not the chat's, and only the last 100 early ends are kept", () => {
    const t = new ChatTracker();
    t.sent('act_mine');
    expect(t.event('action.completed', { actionId: 'act_other', result: 'x' })).toBeUndefined();
    expect(t.event('thinking', { actionId: 'act_other', thought: 'y' })).toBeUndefined();
    expect(t.event('action.started', { actionId: 'act_mine' })).toBeUndefined();
    for (let i = 0; i < 150; i++) t.event('action.completed', { actionId: `act_n${i}`, result: String(i) });
    expect(t.sent('act_n0')).toBeUndefined();
    expect(t.sent('act_n149')).toEqual({ who: 'agent', text: '149' });
  });
});
