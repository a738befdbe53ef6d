/**
 * The local model runner (providerG, Ollama) as `keel ui` manages it: does it answer, which models are installed,
 * pull one with progress. Uses the `ollama` client library, pointed at providerGApiUrl.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { Ollama } from 'ollama';
import { errorMessage } from '../../../sdk/index.js';

const coded = errorsFor('ui');

export interface RunnerState {
  reachable: boolean;
  version?: string;
  error?: string;
  models: Array<{ name: string; size: number }>;
}

export interface PullProgress {
  status: string;
  completed?: number;
  total?: number;
}

export class Runner {
  private readonly client: Ollama;

  constructor(readonly url: string) {
    this.client = new Ollama({ host: url });
  }

  async state(): Promise<RunnerState> {
    try {
      const [{ version }, { models }] = await Promise.all([this.client.version(), this.client.list()]);
      return { reachable: true, version, models: models.map((m) => ({ name: m.name, size: m.size })) };
    } catch (e) {
      return { reachable: false, error: errorMessage(e), models: [] };
    }
  }

  /** Pulls a model, reporting each progress line; resolves when the runner says `success`. */
  async pull(model: string, onProgress: (p: PullProgress) => void): Promise<void> {
    const stream = await this.client.pull({ model, stream: true });
    let last = '';
    for await (const p of stream) {
      last = p.status;
      onProgress({ status: p.status, ...(p.total ? { total: p.total, completed: p.completed ?? 0 } : {}) });
    }
    if (last !== 'success') throw coded('KEEL_E_PLUGIN_FAILED', `the runner stopped before finishing (${last || 'no status'})`);
  }

  abort(): void {
    this.client.abort();
  }
}

/** `[#######.....] 58%` in `width` cells. */
export function bar(completed: number, total: number, width = 30): string {
  const f = total > 0 ? Math.max(0, Math.min(1, completed / total)) : 0;
  const full = Math.round(f * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${String(Math.round(f * 100)).padStart(3)}%`;
}
