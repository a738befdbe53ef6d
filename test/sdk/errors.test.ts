import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  attributed,
  environmentError,
  errorCodeOf,
  errorMessage,
  errorPluginOf,
  errorsFor,
  forbiddenError,
  PluginError,
  PluginErrorCodes,
  pluginError,
} from '../../sdk/index.js';
import { errorMessage as kernelErrorMessage } from '../../kernel/errors.js';

describe('errorMessage', () => {
  it('reads an Error message and converts anything else with String', () => {
    expect(errorMessage(new TypeError('bad type'))).toBe('bad type');
    expect(errorMessage('plain string')).toBe('plain string');
    expect(errorMessage(42)).toBe('42');
    expect(errorMessage(undefined)).toBe('undefined');
    expect(errorMessage({ toString: () => 'custom' })).toBe('custom');
  });

  it('is the one the kernel uses', () => {
    expect(kernelErrorMessage).toBe(errorMessage);
  });
});

describe('pluginError', () => {
  it('builds an Error carrying its KEEL_E_ code and cause', () => {
    const cause = new Error('socket hang up');
    const e = pluginError('KEEL_E_WEB_TIMEOUT', 'Fetching timed out.', { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e).toBeInstanceOf(PluginError);
    expect(e.code).toBe('KEEL_E_WEB_TIMEOUT');
    expect(e.message).toBe('Fetching timed out.');
    expect(e.cause).toBe(cause);
    expect(errorCodeOf(e)).toBe('KEEL_E_WEB_TIMEOUT');
  });

  it('refuses a code that is not KEEL_E_UPPER_CASE', () => {
    expect(() => pluginError('KEEL_E_' as 'KEEL_E_X', 'x')).toThrow(/not of the form/);
    expect(() => pluginError('KEEL_E_web timeout' as 'KEEL_E_X', 'x')).toThrow(TypeError);
    expect(() => pluginError('ENOENT' as 'KEEL_E_X', 'x')).toThrow(TypeError);
  });

  it('subclasses keep their own name and code', () => {
    class WebError extends PluginError<'KEEL_E_WEB_REFUSED'> {}
    const e = new WebError('KEEL_E_WEB_REFUSED', 'refused');
    expect(e).toBeInstanceOf(PluginError);
    expect(errorCodeOf(e)).toBe('KEEL_E_WEB_REFUSED');
  });

  it('environmentError and forbiddenError are coded plugin errors', () => {
    expect(environmentError('port in use').code).toBe('KEEL_E_PLUGIN_ENVIRONMENT');
    expect(forbiddenError('no').code).toBe('KEEL_E_FORBIDDEN');
    expect(forbiddenError('no')).toBeInstanceOf(PluginError);
  });
});

describe('errorsFor and attributed', () => {
  it("a plugin's errors name the plugin, in the error and in its JSON", () => {
    const coded = errorsFor('chatA');
    const e = coded(PluginErrorCodes.INVALID_ARGUMENT, 'A poll needs 2 to 10 options.');
    expect(e).toBeInstanceOf(PluginError);
    expect(e.message).toBe('A poll needs 2 to 10 options.');
    expect(errorCodeOf(e)).toBe('KEEL_E_INVALID_ARGUMENT');
    expect(errorPluginOf(e)).toBe('chatA');
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      code: 'KEEL_E_INVALID_ARGUMENT',
      plugin: 'chatA',
      message: 'A poll needs 2 to 10 options.',
    });
    expect(errorPluginOf(pluginError('KEEL_E_X', 'x'))).toBeUndefined();
  });

  it('the host gives an uncoded error the fallback code and the plugin, keeping the message and the cause', () => {
    const plain = new Error('fetch failed');
    const e = attributed(plain, 'chatA', PluginErrorCodes.CHANNEL_SEND_FAILED);
    expect(e).toMatchObject({ code: 'KEEL_E_CHANNEL_SEND_FAILED', plugin: 'chatA', message: 'fetch failed' });
    expect(e.cause).toBe(plain);
    expect(attributed('odd', 'x').code).toBe('KEEL_E_PLUGIN_FAILED');
    // A plain error with a KEEL_E_ code keeps it.
    expect(attributed(Object.assign(new Error('m'), { code: 'KEEL_E_WEB_BLOCKED' }), 'web').code).toBe('KEEL_E_WEB_BLOCKED');
  });

  it('a coded error stays the same error; the plugin is added only when it names none', () => {
    class Lost extends PluginError<'KEEL_E_LEASE_LOST'> {}
    const lost = new Lost('KEEL_E_LEASE_LOST', 'gone');
    expect(attributed(lost, 'chatB')).toBe(lost);
    expect(lost.plugin).toBe('chatB');
    const own = errorsFor('email')('KEEL_E_NOT_FOUND', 'no mail');
    expect(attributed(own, 'messaging').plugin).toBe('email');
  });

  it('every family code is of the KEEL_E_ form', () => {
    for (const code of Object.values(PluginErrorCodes)) expect(errorCodeOf({ code })).toBe(code);
  });
});

describe('errorCodeOf', () => {
  it('returns only KEEL_E_ codes', () => {
    expect(errorCodeOf(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBeUndefined();
    expect(errorCodeOf(Object.assign(new Error('x'), { code: 'KEEL_E_FORBIDDEN' }))).toBe('KEEL_E_FORBIDDEN');
    expect(errorCodeOf({ code: 'KEEL_E_SKILL_FAILED' })).toBe('KEEL_E_SKILL_FAILED');
    expect(errorCodeOf(null)).toBeUndefined();
    expect(errorCodeOf('KEEL_E_FORBIDDEN')).toBeUndefined();
  });
});

describe('one errorMessage', () => {
  const root = join(import.meta.dirname, '..', '..');
  function* sources(dir: string): Generator<string> {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) yield* sources(path);
      else if (/\.(ts|tsx|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield path;
    }
  }
  const COPY = /(\w+) instanceof Error \? \1\.message : String\(\1\)/;

  it('the pattern recognises the copy it replaced', () => {
    expect(COPY.test('log.warn(`failed: ${e instanceof Error ? e.message : String(e)}`)')).toBe(true);
    expect(COPY.test('const m = err instanceof Error ? err.message : String(err);')).toBe(true);
    expect(COPY.test('log.warn(`failed: ${errorMessage(e)}`)')).toBe(false);
  });

  it('no file re-implements it: sdk/errors.ts errorMessage is used', () => {
    const offenders: string[] = [];
    for (const dir of ['kernel', 'sdk', 'plugins', 'examples']) {
      for (const file of sources(join(root, dir))) {
        if (COPY.test(readFileSync(file, 'utf8'))) offenders.push(relative(root, file));
      }
    }
    expect(offenders).toEqual([]);
  });
});
