/**
 * The table of per-program rules: for each program that can start other programs, how to find them in its
 * arguments. A program without a rule starts nothing the policy knows of (its own name is still checked).
 * Adding a program = adding a row here (and a case to test/plugins/system/policy.test.ts).
 */
import { rsyncRule, tarRule } from './deletes.js';
import { findRule } from './find.js';
import { gitRule } from './git.js';
import { INTERPRETER, interpreterRule } from './interpreters.js';
import { npmRule, npxRule } from './npm.js';
import { powerRule } from './power.js';
import { SHELL, shellRule } from './shell.js';
import type { ProgramRule } from './walk.js';
import { WRAPPER_RULES } from './wrappers.js';

export const PROGRAM_RULES: Readonly<Record<string, ProgramRule>> = {
  ...WRAPPER_RULES,
  find: findRule,
  rsync: rsyncRule,
  tar: tarRule,
  gtar: tarRule,
  git: gitRule,
  npx: npxRule,
  bunx: npxRule,
  pnpx: npxRule,
  npm: npmRule,
  pnpm: npmRule,
  yarn: npmRule,
  systemctl: powerRule,
  loginctl: powerRule,
};

/** The rule of a program (normalised name), if it has one. Shells and interpreters are matched by family. */
export function ruleFor(name: string): ProgramRule | undefined {
  if (SHELL.test(name)) return shellRule;
  if (INTERPRETER.test(name)) return interpreterRule;
  return Object.hasOwn(PROGRAM_RULES, name) ? PROGRAM_RULES[name] : undefined;
}
