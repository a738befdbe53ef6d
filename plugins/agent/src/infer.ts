/**
 * Which provider serves a model, from the model's name (used when `llmProvider` is not set).
 * One prefix family per provider; a name that fits no family, or more than one, is an explicit error
 * that says to set `llmProvider` (never a guess).
 *
 * | Provider  | Family (examples)                                                                  |
 * |-----------|------------------------------------------------------------------------------------|
 * | providerA | `gpt-`, `chatgpt-`, `o1`, `o3`, `o4` (`gpt-4o-mini`, `o3-mini`, `o1`)               |
 * | providerB | `gemini-` (`gemini-2.5-flash`)                                                     |
 * | providerC | `claude-` (`claude-sonnet-4-5`)                                                    |
 * | providerD | `<family>.<model>-<version>`, optionally region-prefixed (`anthropic.claude-3-haiku-20240307-v1:0`, `us.amazon.nova-pro-v1:0`) |
 * | providerE | `<vendor>/<model>` (`openai/gpt-4o`); providerF uses the same form, so such names are ambiguous |
 * | providerG | `<model>:<size>` (`llama3.2:3b`, `qwen2.5-coder:7b`); a providerD id ending in `-v1:0` is not taken for G |
 * | providerH | `mistral-`, `codestral-`, `pixtral-`, `ministral-`, `magistral-`, `devstral-`, `open-mistral-`, `open-mixtral-` |
 * | providerJ | `grok-`                                                                            |
 * | providerF, providerI, providerK | no family of their own: set `llmProvider`                    |
 */

export const PROVIDER_IDS = [
  'providerA',
  'providerB',
  'providerC',
  'providerD',
  'providerE',
  'providerF',
  'providerG',
  'providerH',
  'providerI',
  'providerJ',
  'providerK',
] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

export type Inference = { kind: 'match'; provider: ProviderId } | { kind: 'ambiguous'; candidates: ProviderId[] } | { kind: 'unknown' };

const D_REGION = '(?:us|eu|apac|global|us-gov|ca|jp|au)\\.';
/** `<family>.<model>-<version>`: family and model start with a letter; the version starts with a digit or `v<digit>`. */
const D_FORM = new RegExp(`^(?:${D_REGION})?[a-z][a-z0-9]*\\.[a-z][a-z0-9.-]*-(?:v\\d[\\w.:]*|\\d[\\w.:-]*)$`, 'i');
const E_FORM = /^[a-z0-9][\w.-]*\/[\w.:/-]+$/i;
const G_FORM = /^[a-z0-9][\w.-]*:[\w.-]+$/i;

const ROWS: Array<{ providers: ProviderId[]; test(name: string): boolean }> = [
  { providers: ['providerA'], test: (n) => /^(?:gpt-|chatgpt-|o[134](?:$|-))/i.test(n) },
  { providers: ['providerB'], test: (n) => /^gemini-/i.test(n) },
  { providers: ['providerC'], test: (n) => /^claude-/i.test(n) },
  { providers: ['providerD'], test: (n) => !n.includes('/') && D_FORM.test(n) },
  { providers: ['providerE', 'providerF'], test: (n) => E_FORM.test(n) },
  { providers: ['providerG'], test: (n) => !n.includes('/') && G_FORM.test(n) && !D_FORM.test(n) },
  {
    providers: ['providerH'],
    test: (n) => /^(?:mistral-|codestral-|pixtral-|ministral-|magistral-|devstral-|open-mistral-|open-mixtral-)/i.test(n),
  },
  { providers: ['providerJ'], test: (n) => /^grok-/i.test(n) },
];

/** The provider a model name belongs to, by the table above. */
export function inferProvider(modelName: string): Inference {
  const name = modelName.trim();
  if (!name) return { kind: 'unknown' };
  const found = new Set<ProviderId>();
  for (const row of ROWS) if (row.test(name)) row.providers.forEach((p) => found.add(p));
  const candidates = PROVIDER_IDS.filter((p) => found.has(p));
  if (candidates.length === 1) return { kind: 'match', provider: candidates[0]! };
  if (candidates.length > 1) return { kind: 'ambiguous', candidates };
  return { kind: 'unknown' };
}

/** The message for a name that cannot be routed: says which key to set. */
export function inferenceError(modelName: string, inf: Exclude<Inference, { kind: 'match' }>): string {
  if (inf.kind === 'ambiguous') {
    return `Model "${modelName}" could belong to ${inf.candidates.join(' or ')} (same name form): set llmProvider to the one you mean, e.g. keel config set llmProvider ${inf.candidates[0]}.`;
  }
  return `Cannot tell which provider serves model "${modelName}" from its name: set llmProvider (providerA ... providerK), e.g. keel config set llmProvider providerA.`;
}
