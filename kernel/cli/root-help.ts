/**
 * `keel --help` rendered straight from the command table, without loading commander (which alone costs about
 * 20 ms of start-up). Sub-command help (`keel push --help`) comes from commander.
 */
import { COMMANDS, DESCRIPTION, GLOBAL_OPTIONS } from './commands.js';
import { lightManifests } from './light-manifests.js';

function usage(name: string, args: string[], hasOptions: boolean): string {
  return [name, hasOptions ? '[options]' : '', ...args].filter(Boolean).join(' ');
}

export function rootHelp(): string {
  const rows: Array<[string, string]> = [];
  for (const c of COMMANDS) {
    if (c.path.length !== 1) continue;
    const subs = COMMANDS.filter((s) => s.path.length === 2 && s.path[0] === c.path[0]).map((s) => s.path[1]);
    const left = c.group
      ? `${c.path[0]} <${subs.join('|')}>`
      : usage(
          c.path[0]!,
          (c.args ?? []).map((a) => a.syntax),
          Boolean(c.options?.length),
        );
    rows.push([left, c.description]);
    if (c.group) continue;
    for (const s of subs) {
      const sub = COMMANDS.find((x) => x.path.join(' ') === `${c.path[0]} ${s}`)!;
      rows.push([
        usage(
          `${c.path[0]} ${s}`,
          (sub.args ?? []).map((a) => a.syntax),
          Boolean(sub.options?.length),
        ),
        sub.description,
      ]);
    }
  }
  for (const { manifest } of lightManifests()) {
    for (const c of manifest.cli ?? []) {
      const [name, ...args] = c.name.split(' ');
      if (rows.some(([l]) => l.split(' ')[0] === name)) continue;
      rows.push([usage(name!, args, Boolean(c.options?.length)), `${c.description} [plugin ${manifest.id}]`]);
    }
  }
  rows.push(['help [command]', 'display help for a command']);
  const options: Array<[string, string]> = [
    ['-V, --version', 'output the version number'],
    ...GLOBAL_OPTIONS.map((o): [string, string] => [o.flags, o.description]),
    ['-h, --help', 'display help for command'],
  ];
  const width = Math.max(...[...rows, ...options].map(([l]) => l.length)) + 2;
  const fmt = ([l, r]: [string, string]) => `  ${l.padEnd(width)}${r}`;
  return [
    'Usage: keel [options] [command]',
    '',
    DESCRIPTION,
    '',
    'Options:',
    ...options.map(fmt),
    '',
    'Commands:',
    ...rows.map(fmt),
    '',
    'Exit codes: 0 success, 1 failure, 2 invalid usage or input, 3 not running.',
    'Data: ~/.keel, or the folder named by KEEL_HOME.',
    '',
  ].join('\n');
}
