import { ErrorCodes, KeelError } from '../errors.js';

/** Rejects with KEEL_E_PLUGIN_TIMEOUT when `p` takes longer than `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new KeelError(ErrorCodes.PLUGIN_TIMEOUT, `${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
