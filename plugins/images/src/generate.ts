/**
 * Picks the provider, maps SPEC's sizes and qualities to what the vendor's model accepts, and writes the file.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PluginContext, ProviderCapability, SkillArgs } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { IMAGE_PROVIDERS } from '../manifest.js';

const coded = errorsFor('images');

/** The arguments of generate_image, from its schema in the manifest. */
export type ImageArgs = SkillArgs<typeof manifest, 'generate_image'>;

export interface SavedImage {
  path: string;
  mimeType: string;
  bytes: number;
  provider: string;
  model: string;
}

const KEY_OF: Record<string, string> = { providerA: 'providerAApiKey', providerB: 'providerBApiKey' };
const DEFAULT_MODEL: Record<string, string> = { providerA: 'gpt-image-1', providerB: 'gemini-2.5-flash-image' };

function cfg<T>(ctx: PluginContext, key: string): T | undefined {
  try {
    return ctx.config.get<T>(key);
  } catch {
    return undefined;
  }
}

/** The provider to use, or an Error that names the keys to set. */
export function pickProvider(ctx: PluginContext<typeof manifest>, asked?: string): { id: string; cap: ProviderCapability } {
  const preferred = asked || ctx.config.get('imageProvider');
  const llm = cfg<string>(ctx, 'llmProvider') ?? '';
  const order = preferred
    ? [preferred]
    : [...(IMAGE_PROVIDERS as readonly string[]).filter((p) => p === llm), ...IMAGE_PROVIDERS.filter((p) => p !== llm)];
  const problems: string[] = [];
  for (const id of order) {
    const cap = ctx.use(`provider:${id}`);
    if (!cap?.generateImage) {
      problems.push(`${id} is not running (its plugin is disabled or missing)`);
      continue;
    }
    const c = cap.configured();
    if (c.ok) return { id, cap };
    problems.push(`${id}: ${c.missing}`);
  }
  throw coded(
    'KEEL_E_NOT_CONFIGURED',
    `No image provider is configured: ${problems.join('; ')}. Set providerAApiKey (OpenAI) or providerBApiKey (Gemini), e.g. keel config set ${KEY_OF[order[0] ?? 'providerA']} <key>.`,
  );
}

/** SPEC's size and quality in the words of the vendor's model (gpt-image models, dall-e models, Gemini). */
export function vendorParams(provider: string, model: string, size: string, quality: string): { size?: string; quality?: string } {
  if (provider === 'providerB') return {}; // Gemini image models take neither; the prompt decides.
  if (model.startsWith('dall-e')) return { size, quality: quality === 'hd' ? 'hd' : 'standard' };
  // gpt-image models: 1024x1536 / 1536x1024 are their portrait and landscape sizes; quality low|medium|high.
  const gptSize = size === '1024x1792' ? '1024x1536' : size === '1792x1024' ? '1536x1024' : size;
  return { size: gptSize, quality: quality === 'hd' ? 'high' : 'medium' };
}

const EXT: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' };

export async function generateImage(ctx: PluginContext<typeof manifest>, args: ImageArgs, signal?: AbortSignal): Promise<SavedImage> {
  const { id, cap } = pickProvider(ctx, args.provider);
  const model = ctx.config.get('imageModelName') || DEFAULT_MODEL[id]!;
  const params = vendorParams(id, model, args.size ?? '1024x1024', args.quality ?? 'medium');
  const img = await cap.generateImage!({ prompt: args.prompt, model, ...params, ...(signal ? { signal } : {}) });
  const data = Buffer.from(img.base64, 'base64');
  if (data.length === 0) throw coded('KEEL_E_PROVIDER_FAILED', `${id} returned an empty image.`);
  const dir = join(ctx.home, 'downloads');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const path = join(dir, `image-${stamp}-${Math.random().toString(36).slice(2, 8)}.${EXT[img.mimeType] ?? 'png'}`);
  writeFileSync(path, data, { mode: 0o600 });
  return { path, mimeType: img.mimeType, bytes: data.length, provider: id, model };
}
