/**
 * Skill names for MCP tools: `mcp_<server>_<tool>`, fitted to the skill name pattern (letters, digits and `_`,
 * at most 64 characters); a name cut short or clashing with another tool's gets a short hash of the tool's name.
 */
import { createHash } from 'node:crypto';

const MAX = 64;

function clean(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

function hash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 6);
}

/** `taken`: names already given to other tools of this server (a clash gets the hash). */
export function skillNameFor(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const base = `mcp_${clean(server) || 'server'}_${clean(tool) || 'tool'}`;
  if (base.length <= MAX && !taken.has(base)) return base;
  return `${base.slice(0, MAX - 7)}_${hash(tool)}`;
}
