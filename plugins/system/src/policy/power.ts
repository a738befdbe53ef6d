/**
 * `systemctl reboot` is `reboot` by another name (on Debian, `reboot`, `poweroff` and `shutdown` are links to
 * systemctl): the power verbs of systemctl and loginctl count as the program of that name and as `shutdown`.
 */
import { plain, type ProgramRule } from './walk.js';

const VERBS: Record<string, string> = {
  reboot: 'reboot',
  'soft-reboot': 'reboot',
  kexec: 'reboot',
  poweroff: 'poweroff',
  halt: 'halt',
  emergency: 'shutdown',
  rescue: 'shutdown',
};

export const powerRule: ProgramRule = (_name, rest, v) => {
  const args = plain(rest);
  for (const a of args) {
    if (a.startsWith('-')) continue;
    const verb = VERBS[a.toLowerCase()];
    if (verb) {
      v.walk.builtins.add(verb);
      v.walk.builtins.add('shutdown');
    }
    // isolate reboot.target / start poweroff.target
    if (/^(reboot|poweroff|halt|kexec|soft-reboot)\.target$/i.test(a)) v.walk.builtins.add('shutdown');
  }
};
