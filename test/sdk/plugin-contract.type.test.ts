/**
 * The typed plugin contract, pinned. `npm run typecheck` compiles this file (tsconfig includes test/): a change that
 * loosens the contract makes an `@ts-expect-error` line unused, and one that breaks it fails an `expectTypeOf`.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type agentManifest from '../../plugins/agent/manifest.js';
import type schedulerManifest from '../../plugins/scheduler/manifest.js';
import type systemManifest from '../../plugins/system/manifest.js';
import {
  definePlugin,
  skill,
  Type,
  type ChannelCapability,
  type ConfigValue,
  type KernelInfoCapability,
  type LlmCapability,
  type MemoryCapability,
  type PluginContext,
  type PluginManifest,
  type PolicyCapability,
  type ProviderCapability,
  type SkillArgs,
  type SkillCallContext,
  type SkillName,
  type WebCapability,
} from '../../sdk/index.js';

interface WeatherCapability {
  today(city: string): Promise<string>;
}

// How a plugin adds a capability of its own: declaration merging into the map (named so no real plugin clashes).
declare module '../../sdk/capabilities.js' {
  interface Capabilities {
    'typetest:weather': WeatherCapability;
  }
}

const manifest = {
  id: 'typetest',
  version: '1.0.0',
  kind: 'skill',
  description: 'Pins the typed contract',
  provides: ['typetest:weather'],
  config: {
    typetestGreeting: { schema: Type.String(), default: 'hello', policy: 'SAFE', description: 'Greeting' },
    typetestTimeoutMs: { schema: Type.Integer({ minimum: 1 }), default: 15_000, policy: 'SAFE', description: 'Deadline' },
    typetestToken: { schema: Type.String(), policy: 'LOCKED', secret: true, description: 'No default' },
  },
  skills: [
    {
      name: 'greet',
      description: 'Greets',
      category: 'demo',
      parameters: Type.Object({ name: Type.String(), times: Type.Optional(Type.Integer()) }),
    },
    {
      name: 'pick',
      description: 'Picks',
      category: 'demo',
      parameters: Type.Object({ mode: Type.Union([Type.Literal('fast'), Type.Literal('slow')]) }),
    },
  ],
} as const satisfies PluginManifest;

type Ctx = PluginContext<typeof manifest>;

describe('definePlugin infers the manifest', () => {
  it('types setup(ctx) by the manifest', () => {
    definePlugin({
      manifest,
      setup(ctx) {
        expectTypeOf(ctx).toEqualTypeOf<Ctx>();
        ctx.skills.register('greet', (args, call) => {
          expectTypeOf(args).toEqualTypeOf<{ name: string; times?: number }>();
          expectTypeOf(call.actor.kind).toEqualTypeOf<'operator' | 'user' | 'agent'>();
          return `${args.name} x${args.times ?? 1}`;
        });
        ctx.skills.register('pick', ({ mode }) => {
          expectTypeOf(mode).toEqualTypeOf<'fast' | 'slow'>();
          return mode;
        });
        // @ts-expect-error 'gret' is not a skill of this manifest
        ctx.skills.register('gret', () => 'typo');
        // @ts-expect-error the handler's argument type contradicts the schema (name is a string)
        ctx.skills.register('greet', (args: { name: number }) => args.name);
        // @ts-expect-error 'age' is not among greet's arguments
        ctx.skills.register('greet', (args) => args.age);
      },
    });
  });
});

describe('an inline manifest', () => {
  it('is read as literals without `as const` (definePlugin has a const type parameter)', () => {
    definePlugin({
      manifest: {
        id: 'inline',
        version: '1.0.0',
        kind: 'skill',
        description: 'Inline',
        skills: [{ name: 'shout', description: 'Shouts', category: 'demo', parameters: Type.Object({ text: Type.String() }) }],
      },
      setup(ctx) {
        ctx.skills.register('shout', ({ text }) => {
          expectTypeOf(text).toEqualTypeOf<string>();
          return text.toUpperCase();
        });
        // @ts-expect-error 'whisper' is not declared
        ctx.skills.register('whisper', () => '');
      },
    });
  });
});

describe('the skill() helper', () => {
  it('keeps the skill known to the typed contract', () => {
    definePlugin({
      manifest: {
        id: 'helper',
        version: '1.0.0',
        kind: 'skill',
        description: 'Helper',
        skills: [skill({ name: 'count', description: 'Counts', parameters: Type.Object({ n: Type.Integer() }) })],
      },
      setup(ctx) {
        ctx.skills.register('count', ({ n }) => {
          expectTypeOf(n).toEqualTypeOf<number>();
          return n + 1;
        });
        // @ts-expect-error 'tally' is not declared
        ctx.skills.register('tally', () => 0);
      },
    });
  });
});

describe('ctx.config.get', () => {
  it('returns the declared type of its own keys; defaulted keys are never undefined', () => {
    // Compiled, never run: only the types are under test.
    void ((ctx: Ctx) => {
      expectTypeOf(ctx.config.get('typetestGreeting')).toEqualTypeOf<string>();
      expectTypeOf(ctx.config.get('typetestTimeoutMs')).toEqualTypeOf<number>();
      expectTypeOf(ctx.config.get('typetestToken')).toEqualTypeOf<string | undefined>();
      expectTypeOf<ConfigValue<typeof manifest, 'typetestTimeoutMs'>>().toEqualTypeOf<number>();
    });
  });

  it("still reads kernel and other plugins' keys, as the type given or unknown", () => {
    // Compiled, never run: only the types are under test.
    void ((ctx: Ctx) => {
      expectTypeOf(ctx.config.get<boolean>('safeMode')).toEqualTypeOf<boolean>();
      expectTypeOf(ctx.config.get('webFetchTimeoutMs')).toEqualTypeOf<unknown>();
    });
  });
});

describe('the capability map', () => {
  it('types ctx.use by name, without a cast or type argument', () => {
    // Compiled, never run: only the types are under test.
    void ((ctx: Ctx) => {
      expectTypeOf(ctx.use('llm')).toEqualTypeOf<LlmCapability | undefined>();
      expectTypeOf(ctx.use('memory')).toEqualTypeOf<MemoryCapability | undefined>();
      expectTypeOf(ctx.use('web')).toEqualTypeOf<WebCapability | undefined>();
      expectTypeOf(ctx.use('kernel:policy')).toEqualTypeOf<PolicyCapability | undefined>();
      expectTypeOf(ctx.use('channel:chatA')).toEqualTypeOf<ChannelCapability | undefined>();
      const id: string = 'providerA';
      expectTypeOf(ctx.use(`provider:${id}`)).toEqualTypeOf<ProviderCapability | undefined>();
      expectTypeOf(ctx.use('typetest:weather')).toEqualTypeOf<WeatherCapability | undefined>();
      // @ts-expect-error no plugin declares a capability named 'telepathy'
      ctx.use('telepathy');
      // @ts-expect-error the name decides the type; a type argument is not how it is chosen
      ctx.use<LlmCapability>('llm');
    });
  });

  it('a skill call context (custom skill files) is typed the same for known names, loose for others', () => {
    // Compiled, never run: only the types are under test.
    void ((call: SkillCallContext) => {
      expectTypeOf(call.use('web')).toEqualTypeOf<WebCapability | undefined>();
      expectTypeOf(call.use<(x: number) => number>('coder:sandbox-like')).toEqualTypeOf<((x: number) => number) | undefined>();
    });
  });

  it('ctx.capabilities types the implementations by prefix', () => {
    // Compiled, never run: only the types are under test.
    void ((ctx: Ctx) => {
      expectTypeOf(ctx.capabilities('channel:')[0]!.impl).toEqualTypeOf<ChannelCapability>();
      expectTypeOf(ctx.capabilities('kernel:')[0]!.impl).toEqualTypeOf<KernelInfoCapability | PolicyCapability>();
      expectTypeOf(ctx.capabilities('nothing-known:')[0]!.impl).toEqualTypeOf<unknown>();
    });
  });

  it('ctx.provide checks the name against the manifest and the implementation against the map', () => {
    // Compiled, never run: only the types are under test.
    void ((ctx: Ctx) => {
      const weather: WeatherCapability = { today: async (city) => `sunny in ${city}` };
      ctx.provide('typetest:weather', weather);
      // @ts-expect-error the implementation does not have the capability's shape
      ctx.provide('typetest:weather', { today: (city: number) => city });
      // @ts-expect-error the manifest's provides does not list 'web'
      ctx.provide('web', {} as WebCapability);
    });
  });
});

describe('the built-in manifests are read as literals', () => {
  it('knows their skill names and argument types', () => {
    expectTypeOf<SkillName<typeof agentManifest>>().toEqualTypeOf<'deep_reason'>();
    expectTypeOf<SkillArgs<typeof schedulerManifest, 'cancel_scheduled_task'>>().toEqualTypeOf<{ id: string }>();
    expectTypeOf<SkillArgs<typeof systemManifest, 'approve_command'>['decision']>().toEqualTypeOf<'approve' | 'refuse'>();
  });

  it('a manifest typed only as PluginManifest keeps the loose contract', () => {
    const loose: PluginManifest = manifest;
    definePlugin({
      manifest: loose,
      setup(ctx) {
        ctx.skills.register('anything', (args) => expectTypeOf(args).toBeAny());
        expectTypeOf(ctx.config.get('anyKey')).toEqualTypeOf<unknown>();
      },
    });
  });
});
