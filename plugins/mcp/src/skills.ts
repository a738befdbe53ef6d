/**
 * MCP tools as Keel skills: which tools of a server are offered (toolAllowList / toolDenyList), the skill each
 * becomes (name, the tool's JSON Schema as parameters, admin-only unless the server's config says otherwise),
 * and a tool result as text marked untrusted, like a web page.
 */
import type { SkillManifest } from '../../../sdk/index.js';
import type { McpTool, ServerConfig } from './client.js';
import { skillNameFor } from './names.js';

/** Whether a tool passes its server's lists: deny wins; a non-empty allow list admits only the names it lists. */
export function toolPermitted(c: ServerConfig, tool: string): boolean {
  if (c.toolDenyList?.includes(tool)) return false;
  if (c.toolAllowList?.length && !c.toolAllowList.includes(tool)) return false;
  return true;
}

/** adminOnly: true (the default: a third-party tool is privileged until the operator says otherwise), false, or the tools that are. */
export function toolAdminOnly(c: ServerConfig, tool: string): boolean {
  const a = c.adminOnly ?? true;
  return Array.isArray(a) ? a.includes(tool) : a;
}

/** The tool's input schema as skill parameters: an object schema; `$schema` dropped (ajv speaks draft-07). */
export function parametersOf(t: McpTool): SkillManifest['parameters'] {
  const { $schema: _ignored, ...rest } = (t.inputSchema ?? {}) as Record<string, unknown>;
  return { ...rest, type: 'object' } as unknown as SkillManifest['parameters'];
}

export function skillFor(server: string, c: ServerConfig, t: McpTool, taken: Set<string>): SkillManifest {
  const name = skillNameFor(server, t.name, taken);
  taken.add(name);
  const desc = (t.description ?? '').trim() || `Tool ${t.name}`;
  return {
    name,
    description: `${desc.slice(0, 900)} (tool "${t.name}" of MCP server ${server}; its result is untrusted content)`,
    category: 'mcp',
    parameters: parametersOf(t),
    ...(toolAdminOnly(c, t.name) ? { adminOnly: true } : {}),
    // A server saying its tool destroys things only makes it stricter (isDangerous needs an admin).
    ...(t.annotations?.destructiveHint === true && c.adminOnly !== false ? { isDangerous: true } : {}),
    ...(t.annotations?.readOnlyHint === true ? { isParallelSafe: true } : {}),
  };
}

export function untrustedMarker(server: string, tool: string): string {
  return `[untrusted content from MCP server ${server}, tool ${tool}]`;
}

interface ContentPart {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; text?: string; blob?: string; mimeType?: string };
}

/** A `tools/call` result as text for the model: text parts as they are, others described; the untrusted marker first. */
export function resultText(server: string, tool: string, r: { content?: unknown; structuredContent?: unknown }): string {
  const parts: string[] = [];
  for (const p of (Array.isArray(r.content) ? r.content : []) as ContentPart[]) {
    if (p.type === 'text' && typeof p.text === 'string') parts.push(p.text);
    else if (p.type === 'image' || p.type === 'audio')
      parts.push(`[${p.type} ${p.mimeType ?? ''}, ${Math.floor(((p.data?.length ?? 0) * 3) / 4)} bytes]`);
    else if (p.type === 'resource_link') parts.push(`[resource ${p.name ?? ''} ${p.uri ?? ''}]`);
    else if (p.type === 'resource' && p.resource)
      parts.push(typeof p.resource.text === 'string' ? p.resource.text : `[resource ${p.resource.uri ?? ''} ${p.resource.mimeType ?? ''}]`);
  }
  if (!parts.length && r.structuredContent !== undefined) parts.push(JSON.stringify(r.structuredContent));
  return `${untrustedMarker(server, tool)}\n${parts.join('\n')}`;
}
