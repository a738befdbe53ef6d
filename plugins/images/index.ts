/**
 * Images plugin entry: the `generate_image` skill and the `images` capability (`generate(args)`), which a
 * messaging skill such as send_image can use to generate and send in one step.
 */
import { definePlugin } from '../../sdk/index.js';
import { withLinkedSignal } from '../../sdk/retry.js';
import manifest from './manifest.js';
import { generateImage, type ImageArgs, type SavedImage } from './src/generate.js';

/** Capability `images`. */
export interface ImagesCapability {
  generate(args: ImageArgs, signal?: AbortSignal): Promise<SavedImage>;
}

declare module '../../sdk/capabilities.js' {
  interface Capabilities {
    images: ImagesCapability;
  }
}

export default definePlugin({
  manifest,
  setup(ctx) {
    ctx.provide('images', { generate: (args, signal) => generateImage(ctx, args, signal) });
    ctx.skills.register('generate_image', async (args, call) =>
      withLinkedSignal([call.signal, ctx.signal], (signal) => generateImage(ctx, args, signal)),
    );
    return {};
  },
});
