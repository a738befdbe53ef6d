/**
 * Ad and tracker blocking from Ghostery's Tracker Database (npm `@ghostery/trackerdb`, released several times a
 * week): the package ships its compiled filter engine (`dist/trackerdb.engine`), so nothing is fetched at run time
 * and an `npm update` brings a newer list. A request is blocked when it matches a pattern of a blocking category.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** Ghostery categories whose requests never leave the browser; the others (CDNs, players, utilities) are kept. */
export const BLOCKED_CATEGORIES = new Set(['advertising', 'site_analytics', 'pornvertising', 'adult_advertising']);

type TrackerDb = Awaited<ReturnType<typeof import('@ghostery/trackerdb').default>>;
let loading: Promise<TrackerDb> | undefined;

/** Loads the shipped engine once (about 2 MB, lazily: a Keel that never browses never reads it). */
export function trackerDb(): Promise<TrackerDb> {
  loading ??= (async () => {
    const require = createRequire(import.meta.url);
    const { default: load } = await import('@ghostery/trackerdb');
    const main = require.resolve('@ghostery/trackerdb');
    const enginePath = main.replace(/dist[\\/]cjs[\\/]index\.js$/, 'dist/trackerdb.engine');
    return load(new Uint8Array(await readFile(enginePath)));
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/** The tracker a request belongs to (`"Google Analytics (site_analytics)"`), or undefined when it is not blocked. */
export async function trackerOf(url: string, resourceType: string, sourceUrl?: string): Promise<string | undefined> {
  if (!/^(https?|wss?):/i.test(url)) return undefined;
  const db = await trackerDb();
  const type = RESOURCE_TYPES[resourceType] ?? 'other';
  const matches = db.matchUrl({ url, type: type as never, ...(sourceUrl ? { sourceUrl } : {}) });
  const hit = matches.find((m) => m.category && BLOCKED_CATEGORIES.has(m.category.key));
  return hit ? `${hit.pattern?.name ?? 'tracker'} (${hit.category.key})` : undefined;
}

/** CDP / engine resource types → the adblocker's request types. */
const RESOURCE_TYPES: Record<string, string> = {
  document: 'main_frame',
  subdocument: 'sub_frame',
  stylesheet: 'stylesheet',
  script: 'script',
  image: 'image',
  font: 'font',
  media: 'media',
  xhr: 'xhr',
  fetch: 'xhr',
  websocket: 'websocket',
  ping: 'ping',
  other: 'other',
};
