/**
 * keel.config.yaml on disk: read it into plain values, and change one key in place so the
 * user's comments, ordering and other keys survive every save.
 *
 * `yaml` is imported only when there is a file to read or write: most CLI commands run without one.
 */
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Document } from 'yaml';
import { ErrorCodes, KeelError } from '../errors.js';
import { withLock } from '../queue/lock.js';
import { writeFileAtomic } from './atomic-file.js';

export interface ConfigFileContent {
  exists: boolean;
  /** Top-level keys and their values, in file order. */
  values: Map<string, unknown>;
}

type YamlModule = typeof import('yaml');
let yamlModule: Promise<YamlModule> | undefined;
const loadYaml = (): Promise<YamlModule> => (yamlModule ??= import('yaml'));

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new KeelError(ErrorCodes.CONFIG_FILE_INVALID, `Cannot read ${path}: ${(e as Error).message}`, { file: path }, { cause: e });
  }
}

/** Parse YAML text; errors carry the file, line and column. */
async function parse(text: string, path: string): Promise<Document.Parsed> {
  const { parseDocument, isMap } = await loadYaml();
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const err = doc.errors[0];
  if (err) {
    const pos = err.linePos?.[0];
    const where = pos ? `line ${pos.line}, column ${pos.col}` : 'unknown position';
    throw new KeelError(
      ErrorCodes.CONFIG_FILE_INVALID,
      `${path} is not valid YAML at ${where}: ${err.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`,
      { file: path, line: pos?.line, column: pos?.col },
    );
  }
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw new KeelError(ErrorCodes.CONFIG_FILE_INVALID, `${path} must be a mapping of "key: value" lines at the top level`, { file: path });
  }
  return doc;
}

function valuesOf(doc: Document.Parsed): Map<string, unknown> {
  const out = new Map<string, unknown>();
  // yaml defines a `__proto__` key as an own property, so a hostile file cannot reach prototypes.
  const js = doc.toJS() as Record<string, unknown> | null;
  if (js) for (const [k, v] of Object.entries(js)) out.set(k, v);
  return out;
}

/** Read and parse the config file. A missing file is an empty configuration, not an error. */
export async function readConfigFile(path: string): Promise<ConfigFileContent> {
  const text = await readText(path);
  if (text === undefined) return { exists: false, values: new Map() };
  return { exists: true, values: valuesOf(await parse(text, path)) };
}

/**
 * Set one top-level key in the file, leaving everything else as the user wrote it.
 * The file is re-read first so a hand edit made since loading is kept, and a file that no longer
 * parses is refused (never overwritten). Returns the file's values after the change.
 * Under `<file>.lock`: Keel's processes (the agent, a separate gateway, `keel config set`) each write the file, and
 * without it two changes at once would each write the file as it was before the other's.
 */
export async function writeConfigKey(path: string, key: string, value: unknown): Promise<Map<string, unknown>> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  return withLock(
    `${path}.lock`,
    async () => {
      const text = (await readText(path)) ?? '';
      const doc = await parse(text, path);
      if (value === undefined) doc.delete(key);
      else doc.set(key, value);
      await writeFileAtomic(path, doc.toString(), 0o600);
      return valuesOf(doc);
    },
    { what: 'configuration file' },
  );
}

/** Tighten an existing file that others can read: it holds credentials. */
export async function ensurePrivateMode(path: string): Promise<boolean> {
  try {
    const st = await stat(path);
    if ((st.mode & 0o077) === 0) return false;
    await chmod(path, 0o600);
    return true;
  } catch {
    return false;
  }
}
