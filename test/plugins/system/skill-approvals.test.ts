/**
 * How a privileged skill call waiting for approval is shown (plugins/system/src/skill-approvals.ts): in words,
 * secrets masked (by name at any depth, by the schema's marks, by credential shape), values and the whole cut.
 */
import { Type } from '../../../sdk/index.js';
import { describe, expect, it } from 'vitest';
import { describeSkillCall } from '../../../plugins/system/src/skill-approvals.js';

describe('describeSkillCall', () => {
  it('names the skill and shows each argument, secrets hidden', () => {
    const skill = {
      name: 'deploy',
      description: 'd',
      category: 'test',
      parameters: Type.Object({ target: Type.String(), pin: Type.String({ writeOnly: true }), opts: Type.Object({}) }),
    };
    const text = describeSkillCall(
      'deploy',
      {
        target: 'prod',
        pin: '1234',
        apiKey: 'abc',
        opts: { nested: { password: 'hunter2' }, note: 'key sk-abcdefghijklmnop' },
        n: 3,
      },
      skill,
    );
    expect(text).toBe(
      'run the skill deploy with target: "prod", pin: [hidden], apiKey: [hidden], opts: {"nested":{"password":"[hidden]"},"note":"key [redacted]"}, n: 3 (asked on untrusted work: check it is what you want)',
    );
    for (const secret of ['1234', 'abc"', 'hunter2', 'sk-abcdefghijklmnop']) expect(text).not.toContain(secret);
  });

  it('cuts long values and a long whole', () => {
    expect(describeSkillCall('x', {})).toBe('run the skill x with no arguments (asked on untrusted work: check it is what you want)');
    const long = describeSkillCall('x', { a: 'y'.repeat(5000) });
    expect(long).toMatch(/y… \(\d+ more characters\)/);
    const many = describeSkillCall('x', Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'.repeat(100)])));
    expect(many.length).toBeLessThan(1100);
  });
});
