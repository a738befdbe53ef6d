/**
 * Child of file-lock.e2e.test.ts: adds 1 to the counter file again and again (under the lock or not) until the parent
 * creates `<file>.stop`, saying "started" after the first one, then prints how many it added.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { withFileLockSync } from '../../sdk/file-lock.js';

const [file, mode] = [process.argv[2]!, process.argv[3]];
const bump = () => {
  const v = JSON.parse(readFileSync(file, 'utf8')) as { n: number };
  writeFileSync(`${file}.child.tmp`, JSON.stringify({ n: v.n + 1 }));
  renameSync(`${file}.child.tmp`, file);
};
let count = 0;
do {
  if (mode === 'locked') withFileLockSync(`${file}.lock`, bump);
  else bump();
  if (++count === 1) process.stdout.write('started\n');
} while (!existsSync(`${file}.stop`));
process.stdout.write(`added ${count}\n`);
