/**
 * The file create_custom_skill writes to `$KEEL_HOME/skills/<name>.ts`: a defineSkill module whose run() hands
 * the agent's code (kept as a string, never imported into Keel) to the coder plugin's sandbox.
 */

/** First line of every file the agent wrote; files without it were written by a person. */
export const MARKER = '// keel:agent-skill v1';
/** The capability through which generated skills hand their code to the coder plugin's sandbox. */
export const SANDBOX_CAPABILITY = 'coder:sandbox';

export interface AgentSkillSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
  /** The body of `async function run(args)` (TypeScript). */
  code: string;
  /** Only admins may call it. Default true for agent-written skills; always true with `network`. */
  adminOnly?: boolean;
  /** The skill may use the network: it is then privileged (admin-only) and outbound (issue 35). */
  network?: boolean;
}

/** What an agent-written skill's adminOnly is: true unless asked otherwise, and always with the network. */
export function effectiveAdminOnly(s: Pick<AgentSkillSpec, 'adminOnly' | 'network'>): boolean {
  return s.network === true || s.adminOnly !== false;
}

export const SKILL_NAME = /^[a-z][a-z0-9_]{1,47}$/;

export function renderSkillFile(s: AgentSkillSpec): string {
  const spec = JSON.stringify(
    { name: s.name, description: s.description, parameters: s.parameters, adminOnly: effectiveAdminOnly(s), network: s.network ?? false },
    null,
    2,
  );
  return [
    MARKER,
    '// Written by create_custom_skill (or self_repair_skill). The agent-written code below is a string: it runs',
    "// only in the coder plugin's sandbox (a separate Node process under the permission model), never inside Keel.",
    "import { defineSkill } from 'keel/sdk';",
    '',
    `const SPEC = ${spec} as const;`,
    '',
    `const CODE = ${JSON.stringify(s.code)};`,
    '',
    'type Runner = (req: { skill: string; body: string; args: unknown; network: boolean; signal: AbortSignal }) => Promise<unknown>;',
    '',
    'export default defineSkill({',
    '  name: SPEC.name,',
    '  description: SPEC.description,',
    "  category: 'custom',",
    // A skill with the network is privileged and outbound whatever SPEC.adminOnly says (an edit cannot unprivilege it).
    '  adminOnly: SPEC.adminOnly || SPEC.network,',
    '  isOutbound: SPEC.network,',
    '  parameters: SPEC.parameters as never,',
    '  async run(args, ctx) {',
    `    const runner = ctx.use<Runner>(${JSON.stringify(SANDBOX_CAPABILITY)});`,
    // keel-plain-error: text of the generated skill file, not code of this plugin.
    "    if (typeof runner !== 'function') throw new Error('The coder plugin is not running: agent-written skills run only in its sandbox.');",
    '    return runner({ skill: SPEC.name, body: CODE, args, network: SPEC.network, signal: ctx.signal });',
    '  },',
    '});',
    '',
  ].join('\n');
}

/**
 * A file written by an earlier version (reaching the sandbox through a global slot) rendered anew, with the same
 * spec and code; undefined when the file needs no change (current, or written by a person).
 */
export function upgradeSkillFile(source: string): string | undefined {
  const spec = parseSkillFile(source);
  if (!spec) return undefined;
  // Any file an older template wrote (the global slot; a network skill that was not admin-only and outbound).
  const next = renderSkillFile(spec);
  return next === source ? undefined : next;
}

/** Reads back what renderSkillFile wrote; undefined for a file a person wrote (or one edited out of shape). */
export function parseSkillFile(source: string): AgentSkillSpec | undefined {
  if (!source.startsWith(MARKER)) return undefined;
  const spec = /^const SPEC = ([\s\S]*?) as const;$/m.exec(source);
  const code = /^const CODE = (".*");$/m.exec(source);
  if (!spec || !code) return undefined;
  try {
    const s = JSON.parse(spec[1]!) as Omit<AgentSkillSpec, 'code'>;
    return { ...s, code: JSON.parse(code[1]!) as string };
  } catch {
    return undefined;
  }
}
