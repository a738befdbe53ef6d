/**
 * The skill catalogue as native tools, and the choice of which tools a task gets.
 *
 * Up to TOOL_THRESHOLD skills, every skill is offered. Beyond that only the skills the task can use go out:
 * - the always-on core (CORE_SKILLS that exist);
 * - skills whose name, category or description share words with the task, ranked by a score
 *   (3 per task word in the name, 2 for the category, 1 per word in the description), best first,
 *   until TOOL_THRESHOLD tools are chosen;
 * - `skillRoutingRules` apply in every case: a rule whose `match` (a case-insensitive regular expression)
 *   matches the task adds its `include` skills and removes its `exclude` skills.
 */
import type { SkillManifest, ToolSpec } from '../../../sdk/index.js';

export const TOOL_THRESHOLD = 24;
export const CORE_SKILLS = ['deep_reason', 'recall_memory', 'web_search', 'http_fetch', 'extract_article'];

export interface RoutingRule {
  match: string;
  include?: string[];
  exclude?: string[];
}

export type CatalogueSkill = SkillManifest & { plugin: string };

const VALID_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const STOP = new Set(
  'the and for with that this from into what when then than your you are was were can could would should please about also just have has had not but all any some use using make get set its our out who how why which them they there their will'.split(
    ' ',
  ),
);

function words(text: string): string[] {
  return text
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 3 && !STOP.has(w))
    .map((w) => (w.length > 4 && w.endsWith('s') ? w.slice(0, -1) : w));
}

const schemaCache = new WeakMap<object, Record<string, unknown>>();

/** A plain JSON schema (TypeBox adds symbol keys; JSON round-trip drops them). */
function jsonSchema(parameters: unknown): Record<string, unknown> {
  if (!parameters || typeof parameters !== 'object') return { type: 'object', properties: {} };
  let s = schemaCache.get(parameters);
  if (!s) {
    s = JSON.parse(JSON.stringify(parameters)) as Record<string, unknown>;
    schemaCache.set(parameters, s);
  }
  return s;
}

function flagText(s: SkillManifest): string {
  const flags = [
    s.isParallelSafe && 'parallel-safe',
    s.isDeep && 'deep',
    s.isResearch && 'research',
    s.isDangerous && 'dangerous',
    s.adminOnly && 'admin-only',
  ].filter(Boolean);
  return ` [category: ${s.category}${flags.length ? `; ${flags.join(', ')}` : ''}]`;
}

export function toToolSpec(s: SkillManifest): ToolSpec {
  return { name: s.name, description: `${s.description}${flagText(s)}`, parameters: jsonSchema(s.parameters) };
}

function ruleMatches(rule: RoutingRule, task: string): boolean {
  try {
    return new RegExp(rule.match, 'i').test(task);
  } catch {
    return task.toLowerCase().includes(rule.match.toLowerCase());
  }
}

/** The skills to offer for a task (see the module comment). */
export function selectSkills(
  task: string,
  skills: CatalogueSkill[],
  rules: RoutingRule[] = [],
  threshold = TOOL_THRESHOLD,
): CatalogueSkill[] {
  const usable = skills.filter((s) => VALID_TOOL_NAME.test(s.name));
  const include = new Set<string>();
  const exclude = new Set<string>();
  for (const r of rules) {
    if (!r || typeof r.match !== 'string' || !ruleMatches(r, task)) continue;
    r.include?.forEach((n) => include.add(n));
    r.exclude?.forEach((n) => exclude.add(n));
  }
  const allowed = usable.filter((s) => !exclude.has(s.name));
  if (allowed.length <= threshold) return allowed;

  const chosen = new Map<string, CatalogueSkill>();
  for (const s of allowed) if (include.has(s.name) || CORE_SKILLS.includes(s.name)) chosen.set(s.name, s);
  const taskWords = new Set(words(task));
  const scored = allowed
    .filter((s) => !chosen.has(s.name))
    .map((s) => {
      let score = 0;
      for (const w of words(s.name)) if (taskWords.has(w)) score += 3;
      for (const w of words(s.category)) if (taskWords.has(w)) score += 2;
      for (const w of new Set(words(s.description))) if (taskWords.has(w)) score += 1;
      return { s, score };
    })
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.s.name.localeCompare(b.s.name));
  for (const { s } of scored) {
    if (chosen.size >= threshold) break;
    chosen.set(s.name, s);
  }
  return [...chosen.values()];
}
