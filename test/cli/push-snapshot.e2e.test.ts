/**
 * Issue 36: with no Keel process running, `actions.json` (SPEC's queue file) shows every `keel push`, not only the
 * first one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keelCli, rm, tmp } from '../helpers.js';

const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rm(h);
});

describe('keel push and actions.json', () => {
  it('three pushes with no runner: three actions in actions.json', async () => {
    const home = tmp();
    homes.push(home);
    const ids: string[] = [];
    for (const task of ['one', 'two', 'three']) {
      const r = await keelCli(home, ['push', task, '--json']);
      expect(r.code, r.stderr).toBe(0);
      ids.push((JSON.parse(r.stdout) as { id: string }).id);
    }
    const file = JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8')) as { actions: Array<{ id: string; task: string }> };
    expect(file.actions.map((a) => [a.id, a.task])).toEqual([
      [ids[0], 'one'],
      [ids[1], 'two'],
      [ids[2], 'three'],
    ]);
    // The CLI reads the same three back, once each.
    const tasks = JSON.parse((await keelCli(home, ['tasks', '--json'])).stdout) as { pending: Array<{ id: string }> };
    expect(tasks.pending.map((a) => a.id)).toEqual(ids);
  });
});
