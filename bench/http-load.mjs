/**
 * An HTTP load generator in its own process (so the server measured does not share its process with the load):
 * `conns` keep-alive loops hammer one URL for `ms` milliseconds. Prints one JSON line {n, ms, p99, bad}.
 *   node bench/http-load.mjs <port> <path> <headers JSON> <ms> <conns>
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

const [port, path, headersJson, msArg, connsArg] = process.argv.slice(2);
const headers = JSON.parse(headersJson ?? '{}');
const ms = Number(msArg ?? 2000);
const conns = Number(connsArg ?? 32);
const agent = new Agent({ keepAlive: true, maxSockets: conns });
const lat = [];
let bad = 0;
const end = performance.now() + ms;
const one = () =>
  new Promise((resolve, reject) => {
    const t = performance.now();
    const r = request({ host: '127.0.0.1', port: Number(port), path, headers, agent }, (res) => {
      if (res.statusCode !== 200) bad++;
      res.resume();
      res.on('end', () => {
        lat.push(performance.now() - t);
        resolve();
      });
    });
    r.on('error', reject);
    r.end();
  });
const started = performance.now();
await Promise.all(
  Array.from({ length: conns }, async () => {
    while (performance.now() < end) await one();
  }),
);
const elapsed = performance.now() - started;
agent.destroy();
lat.sort((a, b) => a - b);
process.stdout.write(`${JSON.stringify({ n: lat.length, ms: elapsed, p99: lat[Math.floor(lat.length * 0.99)] ?? 0, bad })}\n`);
