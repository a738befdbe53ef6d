/**
 * Which commands re-exec themselves with a smaller V8 young generation, and with what arguments.
 */
import { describe, expect, it } from 'vitest';
import { tunedArgs } from '../../kernel/cli/tune.js';

const argv = (...a: string[]) => ['/usr/bin/node', '/k/dist/cli.js', ...a];

describe('tunedArgs', () => {
  it('adds --max-semi-space-size before the runtime flags and the script for run and gateway', () => {
    expect(tunedArgs(argv('run', '--daemon'), [], {})).toEqual(['--max-semi-space-size=2', '/k/dist/cli.js', 'run', '--daemon']);
    expect(tunedArgs(argv('gateway', '-p', '9'), ['--enable-source-maps'], {})).toEqual([
      '--max-semi-space-size=2',
      '--enable-source-maps',
      '/k/dist/cli.js',
      'gateway',
      '-p',
      '9',
    ]);
  });

  it('leaves short-lived commands and --help alone', () => {
    for (const a of [argv('push', 'x'), argv('status'), argv('config', 'get', 'x'), argv(), argv('gateway', '--help')])
      expect(tunedArgs(a, [], {})).toBeUndefined();
  });

  it('honours KEEL_SEMI_SPACE_MB, and 0 or nonsense turns it off', () => {
    expect(tunedArgs(argv('run'), [], { KEEL_SEMI_SPACE_MB: '8' })?.[0]).toBe('--max-semi-space-size=8');
    for (const v of ['0', '-1', 'lots', '1.5', '100000']) expect(tunedArgs(argv('run'), [], { KEEL_SEMI_SPACE_MB: v })).toBeUndefined();
  });

  it('never re-execs twice nor overrides a flag the user gave', () => {
    expect(tunedArgs(argv('run'), ['--max-semi-space-size=2'], {})).toBeUndefined();
    expect(tunedArgs(argv('run'), [], { NODE_OPTIONS: '--max-semi-space-size=32' })).toBeUndefined();
  });
});
