/**
 * The command policy as a pure function: a table of bypass attempts against the default lists of SPEC.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../../../plugins/system/src/command-policy.js';
import { toArgv } from '../../../plugins/system/src/tokenize.js';
import { CASES, lists } from './bypass-cases.js';

describe('command policy: bypass attempts (default lists)', () => {
  it('has at least 30 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });
  for (const [what, argv, allowed, fragment] of CASES) {
    it(`${allowed ? 'allows' : 'refuses'} ${what}`, () => {
      const d = analyze(argv, lists);
      expect(d.allowed, `${JSON.stringify(argv)}: ${d.reason}`).toBe(allowed);
      if (fragment) expect(d.reason).toContain(fragment);
    });
  }
});

describe('command policy: modes and lists', () => {
  it('sudo mode bypasses the allow list only', () => {
    expect(analyze(['vim', 'x'], { ...lists, sudo: true }).allowed).toBe(true);
    const r = analyze(['env', 'rm', 'x'], { ...lists, sudo: true });
    expect(r.allowed).toBe(false);
    expect(r.reason).toContain('sudo mode');
    expect(analyze(['bash', '-c', 'ls; shutdown now'], { ...lists, sudo: true }).allowed).toBe(false);
  });
  it('an empty allow list blocks everything unless sudo', () => {
    const r = analyze(['echo', 'x'], { allow: [], deny: ['rm'], sudo: false });
    expect(r.allowed).toBe(false);
    expect(r.reason).toContain('commandAllowList is empty');
    expect(analyze(['echo', 'x'], { allow: [], deny: ['rm'], sudo: true }).allowed).toBe(true);
  });
  it('deny beats allow', () => {
    expect(analyze(['rm', 'x'], { allow: ['rm'], deny: ['rm'], sudo: false }).allowed).toBe(false);
  });
  it('lists every program the command would start', () => {
    expect(analyze(['nice', 'env', 'A=1', 'bash', '-c', 'ls | grep x'], { ...lists, allow: [...lists.allow] }).programs).toEqual(
      expect.arrayContaining(['nice', 'env', 'bash', 'ls', 'grep']),
    );
  });
});

describe('command policy: what still runs', () => {
  // The inline-code rules refuse string building and names not written in the code; plain code stays allowed.
  for (const argv of [
    ['python3', '-c', 'import sys; print(sys.argv[1:], sys.argv[-1])', 'a'],
    ['python3', '-c', "import json, sys; print(json.load(sys.stdin)['name'])"],
    ['node', '-e', 'console.log(process.argv[1], 1 + 1)', 'a'],
    ['perl', '-e', 'print "home: $ENV{HOME}\\n"'],
    ['perl', '-ne', 'print if /x/'],
    ['node', '-e', "console.log(require('os')['platform']())"],
    // what deletes nothing: a dry run of git clean, git rm --cached (it only unstages)
    ['git', 'clean', '-fdn'],
    ['git', 'rm', '--cached', 'sentinel'],
  ]) {
    it(`allows ${JSON.stringify(argv)}`, () => {
      const d = analyze(argv, lists);
      expect(d.allowed, d.reason).toBe(true);
    });
  }
});

describe('toArgv', () => {
  it('splits with quotes and escapes', () => {
    expect(toArgv(`echo 'a b' "c \\"d\\"" e\\ f`)).toEqual(['echo', 'a b', 'c "d"', 'e f']);
  });
  for (const bad of [
    'ls | grep x',
    'ls; rm x',
    'ls && rm x',
    'ls || rm x',
    'echo x > f',
    'cat < f',
    'echo `id`',
    'echo $(id)',
    'sleep 1 &',
  ]) {
    it(`refuses "${bad}" (needs a shell)`, () => {
      expect(() => toArgv(bad)).toThrow(/needs a shell/);
    });
  }
});
