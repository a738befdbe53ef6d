import { describe, expect, it } from 'vitest';
import { inferenceError, inferProvider } from '../../../plugins/agent/src/infer.js';

describe('provider inference from the model name', () => {
  const rows: Array<[string, string]> = [
    ['gpt-4o-mini', 'providerA'],
    ['gpt-4.1', 'providerA'],
    ['chatgpt-4o-latest', 'providerA'],
    ['o1', 'providerA'],
    ['o1-mini', 'providerA'],
    ['o3-mini', 'providerA'],
    ['o4-mini', 'providerA'],
    ['gemini-2.5-flash', 'providerB'],
    ['gemini-1.5-pro-002', 'providerB'],
    ['claude-sonnet-4-5', 'providerC'],
    ['claude-3-5-haiku-20241022', 'providerC'],
    ['anthropic.claude-3-haiku-20240307-v1:0', 'providerD'],
    ['us.anthropic.claude-3-7-sonnet-20250219-v1:0', 'providerD'],
    ['eu.amazon.nova-pro-v1:0', 'providerD'],
    ['amazon.titan-text-express-v1', 'providerD'],
    ['meta.llama3-70b-instruct-v1:0', 'providerD'],
    ['mistral.mistral-large-2402-v1:0', 'providerD'],
    ['llama3.2:3b', 'providerG'],
    ['qwen2.5-coder:7b', 'providerG'],
    ['mistral:7b', 'providerG'],
    ['gemma2:latest', 'providerG'],
    ['mistral-large-latest', 'providerH'],
    ['codestral-latest', 'providerH'],
    ['pixtral-12b-2409', 'providerH'],
    ['ministral-8b-latest', 'providerH'],
    ['magistral-medium-latest', 'providerH'],
    ['open-mistral-nemo', 'providerH'],
    ['grok-4', 'providerJ'],
    ['grok-3-mini', 'providerJ'],
  ];
  it.each(rows)('%s -> %s', (model, provider) => {
    expect(inferProvider(model)).toEqual({ kind: 'match', provider });
  });

  const ambiguous: Array<[string, string[]]> = [
    ['openai/gpt-4o', ['providerE', 'providerF']],
    ['meta/llama-3.1-8b-instruct', ['providerE', 'providerF']],
    ['meta-llama/llama-3-8b-instruct:free', ['providerE', 'providerF']],
    ['gpt-oss:20b', ['providerA', 'providerG']],
  ];
  it.each(ambiguous)('%s is ambiguous between %j', (model, candidates) => {
    const inf = inferProvider(model);
    expect(inf).toEqual({ kind: 'ambiguous', candidates });
    expect(inferenceError(model, inf as Exclude<typeof inf, { kind: 'match' }>)).toMatch(
      new RegExp(`could belong to ${candidates.join(' or ')}.*set llmProvider`),
    );
  });

  it.each(['llama-3.3-70b-versatile', 'deepseek-chat', 'my-model', 'omni', 'o2-mini', ''])(
    '"%s" is unknown and the error says to set llmProvider',
    (model) => {
      const inf = inferProvider(model);
      expect(inf).toEqual({ kind: 'unknown' });
      expect(inferenceError(model, { kind: 'unknown' })).toMatch(/set llmProvider/);
    },
  );
});
