// Child process for the crash test: starts a kernel on KEEL_HOME, records memories as fast as it can and prints
// the id of each one after record() resolved (acknowledged). The parent kills it with SIGKILL mid-stream.
import { startMemory } from './harness.js';

const h = await startMemory({ home: process.argv[2]!, config: 'memoryConsolidationThreshold: 10000\n' });
const mem = h.memory;
let i = 0;
for (;;) {
  const batch = Array.from({ length: 8 }, () => mem.record({ content: `crash record ${i++} ${'z'.repeat(200)}` }));
  for (const e of await Promise.all(batch)) process.stdout.write(`${e.id}\n`);
}
