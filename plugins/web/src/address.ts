/**
 * Which IP addresses a web fetch may connect to. Everything that reaches the host itself or its networks is
 * refused: loopback, private, link-local, unspecified, CGNAT, multicast, reserved and documentation ranges, and
 * IPv6 forms that embed one of those IPv4 addresses (IPv4-mapped, IPv4-compatible, NAT64, 6to4).
 */
import { isIP } from 'node:net';

/** [network, prefix length, what it is] */
const V4_BLOCKED: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignment'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function v4ToInt(ip: string): number {
  const p = ip.split('.').map(Number);
  return (((p[0]! << 24) >>> 0) + (p[1]! << 16) + (p[2]! << 8) + p[3]!) >>> 0;
}

const V4_TABLE = V4_BLOCKED.map(([net, len, kind]) => {
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  return { base: (v4ToInt(net) & mask) >>> 0, mask, kind };
});

function classifyV4(ip: string): string | undefined {
  const n = v4ToInt(ip);
  if (n === 0xffffffff) return 'broadcast';
  for (const r of V4_TABLE) if ((n & r.mask) >>> 0 === r.base) return r.kind;
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (zone id dropped). */
function v6Groups(ip: string): number[] {
  let s = ip.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  // A trailing dotted IPv4 part counts as two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const n = v4ToInt(dotted[1]!);
    s = `${s.slice(0, dotted.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  return [...h, ...Array<string>(fill).fill('0'), ...t].map((g) => parseInt(g, 16));
}

function groupsToV4(hi: number, lo: number): string {
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

function classifyV6(ip: string): string | undefined {
  const g = v6Groups(ip);
  if (g.length !== 8 || g.some((x) => Number.isNaN(x))) return 'unparsable';
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return 'unspecified';
  if (zeros(0, 7) && g[7] === 1) return 'loopback';
  const embedded = (v4: string, how: string) => {
    const k = classifyV4(v4);
    return k ? `${k} (${how} ${v4})` : undefined;
  };
  // ::ffff:a.b.c.d (IPv4-mapped) and ::ffff:0:a.b.c.d (IPv4-translated)
  if (zeros(0, 5) && g[5] === 0xffff) return embedded(groupsToV4(g[6]!, g[7]!), 'IPv4-mapped');
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded(groupsToV4(g[6]!, g[7]!), 'IPv4-translated');
  // ::a.b.c.d (deprecated IPv4-compatible): never a public destination.
  if (zeros(0, 6)) return `IPv4-compatible (${groupsToV4(g[6]!, g[7]!)})`;
  // 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64) reach the embedded IPv4 address.
  if (g[0] === 0x64 && g[1] === 0xff9b && (zeros(2, 6) || g[2] === 1)) return embedded(groupsToV4(g[6]!, g[7]!), 'NAT64');
  // 2002:AABB:CCDD::/16 (6to4)
  if (g[0] === 0x2002) return embedded(groupsToV4(g[1]!, g[2]!), '6to4');
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return 'private (unique local)';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'site-local';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if (first === 0x0100 && zeros(1, 4)) return 'discard';
  if (first === 0x2001 && g[1] === 0x0db8) return 'documentation';
  return undefined;
}

/**
 * Why an IP address must not be fetched from (`loopback`, `private`, ...), or undefined when it is a public
 * address. Anything that is not a valid IP address is refused too.
 */
export function blockedReason(ip: string): string | undefined {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const v = isIP(bare.split('%')[0] ?? '');
  if (v === 4) return classifyV4(bare);
  if (v === 6) return classifyV6(bare);
  return 'not an IP address';
}
