/**
 * libsignal (the Signal implementation under baileys) writes to the console itself: "Closing session:",
 * "Opening session:", "Removing old closed session:" with the whole session record, which holds the ratchet's
 * private keys. Printed, those would land in Keel's terminal and daemon log, beside everything else. This filter
 * keeps libsignal's lines off the console for the whole process (installed once, when chatB starts): the first
 * words go to the debug log, the objects after them nowhere.
 */
const SIGNAL_LINE =
  /^(Closing session|Opening session|Removing old closed session|Session already closed|Session already open|Closing open session|Closing stale open session|Decrypted message with closed session|Migrating session to|Failed to decrypt message with any known session|Session error:|V1 session storage migration error|Unhandled bucket type|WARNING: Expected pubkey of length 33)/;

const METHODS = ['log', 'info', 'warn', 'error', 'debug'] as const;
let sink: ((line: string) => void) | undefined;
let installed = false;

/** Whether a console call is one of libsignal's (its first argument starts with one of its phrases). */
export function isSignalLine(args: unknown[]): boolean {
  return typeof args[0] === 'string' && SIGNAL_LINE.test(args[0]);
}

/** Installs the filter (once per process); `debug` receives the first string of each dropped line. */
export function quietSignal(debug: (line: string) => void): void {
  sink = debug;
  if (installed) return;
  installed = true;
  for (const m of METHODS) {
    const original = console[m].bind(console);
    console[m] = (...args: unknown[]) => {
      if (isSignalLine(args)) {
        sink?.(`chatB (libsignal): ${String(args[0]).replace(/:$/, '')}`);
        return;
      }
      original(...args);
    };
  }
}
