/**
 * Image generation (SPEC names `generate_image`): providerA or providerB makes an image from a prompt and it is
 * saved under `$KEEL_HOME/downloads/`. See docs/images.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

/** SPEC's sizes and qualities (as `send_image` lists them). */
export const IMAGE_SIZES = ['1024x1024', '1024x1792', '1792x1024'] as const;
export const IMAGE_QUALITIES = ['medium', 'standard', 'hd'] as const;
export const IMAGE_PROVIDERS = ['providerA', 'providerB'] as const;

const manifest = {
  id: 'images',
  version: '1.0.0',
  kind: 'skill',
  description: 'generate_image: an image from a text prompt by providerA (OpenAI) or providerB (Gemini), saved as a file under downloads/.',
  provides: ['images'],
  permissions: { network: true, filesystem: ['$KEEL_HOME'] },
  config: {
    imageProvider: {
      schema: Type.Union([Type.Literal(''), ...IMAGE_PROVIDERS.map((p) => Type.Literal(p))]),
      default: '',
      env: ['KEEL_IMAGE_PROVIDER'],
      policy: 'SAFE',
      description:
        'Provider of generate_image: providerA or providerB; empty picks llmProvider when it is one of them, else the first of A, B that is configured.',
    },
    imageModelName: {
      schema: Type.String(),
      default: '',
      env: ['KEEL_IMAGE_MODEL_NAME'],
      policy: 'SAFE',
      description: "Image model; empty uses the provider's default (providerA gpt-image-1, providerB its Gemini image model).",
    },
  },
  skills: [
    {
      name: 'generate_image',
      description:
        'Generate an image from a text prompt and save it as a file under downloads/; returns {path, mimeType, bytes, provider, model}. ' +
        'To send it on a chat, prefer send_image when it exists; otherwise pass the path to send_file.',
      category: 'media',
      parameters: Type.Object(
        {
          prompt: Type.String({ minLength: 1, maxLength: 4000, description: 'What the image shows' }),
          size: Type.Optional(
            Type.Union(
              IMAGE_SIZES.map((s) => Type.Literal(s)),
              { description: 'Default 1024x1024' },
            ),
          ),
          quality: Type.Optional(
            Type.Union(
              IMAGE_QUALITIES.map((q) => Type.Literal(q)),
              { description: 'Default medium' },
            ),
          ),
          provider: Type.Optional(
            Type.Union(
              IMAGE_PROVIDERS.map((p) => Type.Literal(p)),
              { description: 'Default: imageProvider, then llmProvider, then the first configured' },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
