/**
 * Reads a QR code drawn for a terminal (qrcode's `small` terminal form: half blocks, black on white) back into its
 * text with jsQR, as a phone camera would: the test "scans" what Keel showed, not a value it was handed.
 */
import { stripVTControlCharacters } from 'node:util';
import jsQRModule from 'jsqr';

type Decode = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;
// jsqr is CommonJS with a default export: under ESM it may come wrapped once more.
const jsQR = ((jsQRModule as unknown as { default?: Decode }).default ?? jsQRModule) as unknown as Decode;

export function readTerminalQr(art: string): string | undefined {
  // Rows drawn black on white; the last line of `small` art repeats the quiet zone in white and is left out.
  const rows = art
    .split('\n')
    .filter((l) => l.includes('\u001b[47m\u001b[30m') && !l.includes('\u001b[37m'))
    .map((l) => stripVTControlCharacters(l))
    .filter((l) => l.length > 0);
  if (!rows.length) return undefined;
  const modules: boolean[][] = [];
  for (const row of rows) {
    const top: boolean[] = [];
    const bottom: boolean[] = [];
    for (const ch of row) {
      top.push(ch === '█' || ch === '▀');
      bottom.push(ch === '█' || ch === '▄');
    }
    modules.push(top, bottom);
  }
  const scale = 6;
  const quiet = 4;
  const w = (modules[0]!.length + 2 * quiet) * scale;
  const hgt = (modules.length + 2 * quiet) * scale;
  const data = new Uint8ClampedArray(w * hgt * 4).fill(255);
  modules.forEach((line, y) =>
    line.forEach((dark, x) => {
      if (!dark) return;
      for (let dy = 0; dy < scale; dy++)
        for (let dx = 0; dx < scale; dx++) {
          const i = (((y + quiet) * scale + dy) * w + (x + quiet) * scale + dx) * 4;
          data[i] = data[i + 1] = data[i + 2] = 0;
        }
    }),
  );
  return jsQR(data, w, hgt)?.data;
}
