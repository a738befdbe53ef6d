/**
 * A loopback Discord (127.0.0.1, port 0) for the real discord.js: the REST API v10 under `/api/v10` and the
 * gateway WebSocket at `/gateway` (JSON encoding, no compression, as discord.js uses it without zlib-sync).
 *
 * REST: `GET /gateway/bot` (the gateway URL is discovered here), `GET /users/@me`, `POST /channels/:id/messages`
 * (JSON or multipart with `payload_json` + `files[n]`; a repeated `nonce` with `enforce_nonce` returns the message
 * it created the first time, as Discord does), `GET` (history, newest first, `after` / `before` / `limit`; held per channel
 * by `historyGates`) / `PATCH` / `DELETE` of messages,
 * `POST /channels/:id/typing`, reactions, `PUT /applications/:id/commands`, interaction callbacks (one per
 * interaction, a second refused with 40060; a wrong token 10062) and edits of the original response (`PATCH
 * /webhooks/:app/:token/messages/@original`, 404 10015 for an unknown token), attachments served like the CDN
 * (optionally held by `cdnGate`); errors in Discord's shape, a 429 with `Retry-After` and `retry_after`.
 * Button components on messages (checked as Discord checks them), taps on them (`pushButton`: INTERACTION_CREATE
 * type 3) whose callback 6/7 and edit of `@original` change the tapped message, and interaction follow-ups
 * (`POST /webhooks/:app/:token`, ephemeral with flag 64).
 * Gateway: HELLO (op 10), IDENTIFY (op 2) → READY (with `session_id`, `resume_gateway_url`) + GUILD_CREATE (its
 * channels with `last_message_id`, the bot's own member; a channel in `noHistoryAccess` with an overwrite denying
 * READ_MESSAGE_HISTORY, and its history answering 403),
 * heartbeats (op 1 → op 11), RESUME (op 6) → the missed events replayed + RESUMED, or INVALID_SESSION (op 9);
 * close 4004 for a wrong token, 4014 for disallowed intents; no MESSAGE_CREATE to a session whose IDENTIFY lacks the
 * intent for it (GUILD_MESSAGES, DIRECT_MESSAGES). Events of a session are kept for a resume.
 * The fake counts what it saw so tests can prove "no message lost, no chunk twice".
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { FakeGateway, guildCreate, snowflake } from './discord-gateway.js';
import type { DcCall, DcMessage, FailSpec, FakeDiscord } from './discord-types.js';

export type { DcCall, DcMessage, FailSpec, FakeDiscord } from './discord-types.js';

/** The permission bit a channel overwrite denies for `noHistoryAccess`. */
const READ_MESSAGE_HISTORY = 1 << 16;

function route(method: string, path: string): string {
  return `${method} ${path
    .replace(/\/\d{5,}/g, '/:id')
    .replace(/\/interactions\/:id\/[^/]+/, '/interactions/:id/:token')
    .replace(/\/webhooks\/:id\/[^/]+/, '/webhooks/:id/:token')
    .replace(/\/reactions\/[^/]+/, '/reactions/:emoji')}`;
}

function splitMultipart(raw: Buffer, boundary: string): Array<{ head: string; body: Buffer }> {
  const sep = Buffer.from(`--${boundary}`);
  const parts: Array<{ head: string; body: Buffer }> = [];
  let at = raw.indexOf(sep);
  while (at >= 0) {
    const start = at + sep.length;
    if (raw.subarray(start, start + 2).toString() === '--') break;
    const next = raw.indexOf(sep, start);
    if (next < 0) break;
    const chunk = raw.subarray(start + 2, next - 2);
    const split = chunk.indexOf('\r\n\r\n');
    parts.push({ head: chunk.subarray(0, split).toString('utf8'), body: chunk.subarray(split + 4) });
    at = next;
  }
  return parts;
}

export async function startFakeDiscord(o: { token?: string; heartbeatMs?: number } = {}): Promise<FakeDiscord> {
  const token = o.token ?? 'MTAwMDAwMDAwMDAwMDAwMDAx.fake.discord-test-token';
  const bot = { id: '100000000000000001', username: 'keel-test', bot: true, discriminator: '0', global_name: null, avatar: null };
  const applicationId = '100000000000000001';
  const guildId = '200000000000000002';
  const channelId = '300000000000000003';
  const channels = new Map<
    string,
    { id: string; type: number; guild_id?: string; parent_id?: string; name?: string; recipients?: unknown[] } & Record<string, unknown>
  >([[channelId, { id: channelId, type: 0, guild_id: guildId, name: 'general' }]]);
  const history = new Map<string, DcMessage[]>();
  const nonces = new Map<string, DcMessage>();
  const failures: Array<{ route: string; error: FailSpec; count: number; after: number }> = [];
  /** Attachment bodies served like Discord's CDN: path → bytes. */
  const cdnFiles = new Map<string, Buffer>();
  /** Interactions by token (tokens are valid for 15 minutes on Discord; here for the life of the fake). */
  const interactions = new Map<string, { id: string; payload: unknown; acked: boolean; message?: { id: string; channel_id: string } }>();

  /** The bot's managed role, and a role everyone may be given. */
  const botRoleId = '110000000000000011';
  const otherRoleId = '120000000000000012';
  const roleOf = (which: 'bot' | 'other') => (which === 'bot' ? botRoleId : otherRoleId);
  const role = (id: string, name: string) => ({
    id,
    name,
    permissions: '0',
    position: 0,
    color: 0,
    hoist: false,
    managed: false,
    mentionable: true,
    flags: 0,
  });
  const user = (id: string) => ({ id, username: `user${id.slice(-4)}`, discriminator: '0', global_name: null, avatar: null });
  // Snowflakes as decimal strings: the longer is the larger, else the string order is the number order.
  const below = (a: string, b: string) => a.length < b.length || (a.length === b.length && a < b);
  const store = (m: DcMessage) => {
    const list = history.get(m.channel_id) ?? [];
    // Oldest first by id: inserted in its place (a backdated message goes where its time puts it), scanning from
    // the newest end, where nearly every message lands; no sort of the whole channel per message.
    let i = list.length;
    while (i > 0 && below(m.id, list[i - 1]!.id)) i--;
    list.splice(i, 0, m);
    history.set(m.channel_id, list);
    // A message in an archived thread unarchives it, as on Discord.
    const t = channels.get(m.channel_id);
    const meta = t?.thread_metadata as { archived?: boolean } | undefined;
    if (t && meta?.archived) t.thread_metadata = { ...meta, archived: false };
  };

  const gw = new FakeGateway({
    token,
    heartbeatMs: () => fake.heartbeatMs,
    ready: (sessionId) => ({
      v: 10,
      user: bot,
      guilds: [{ id: guildId, unavailable: true }],
      session_id: sessionId,
      resume_gateway_url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/gateway`,
      shard: [0, 1],
      application: { id: applicationId, flags: 0 },
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      user_settings: {},
    }),
    // Each channel with its newest message id, as Discord's GUILD_CREATE has it; the bot's own member, so that a
    // client can work out its permissions.
    guild: () =>
      guildCreate(
        guildId,
        [...channels.values()]
          .filter((c) => c.guild_id === guildId && !(c.thread_metadata as { archived?: boolean } | undefined)?.archived)
          .map((c) => ({
            ...c,
            last_message_id: history.get(c.id)?.at(-1)?.id ?? null,
            ...(fake.noHistoryAccess.has(c.id)
              ? { permission_overwrites: [{ id: guildId, type: 0, allow: '0', deny: String(READ_MESSAGE_HISTORY) }] }
              : {}),
          })),
        [{ user: bot, roles: [botRoleId], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 }],
        [
          // The role Discord creates for a bot when it joins (managed, tagged with the bot's id), and another role.
          { ...role(botRoleId, bot.username), managed: true, position: 1, tags: { bot_id: bot.id } },
          { ...role(otherRoleId, 'helpers'), position: 2 },
        ],
      ),
  });
  const dispatch = (t: string, d: unknown) => gw.dispatch(t, d);

  /** An edit of a stored message: its content, and its components (an empty list takes them off, as on Discord). */
  const editStored = (ref: { id: string; channel_id: string }, body: { content?: unknown; components?: unknown }): DcMessage => {
    const m = (history.get(ref.channel_id) ?? []).find((x) => x.id === ref.id);
    if (!m) throw new Error(`no message ${ref.id}`);
    if (body.content !== undefined) m.content = String(body.content);
    if (Array.isArray(body.components)) {
      if (body.components.length) m.components = body.components;
      else delete m.components;
    }
    return m;
  };
  let fake: FakeDiscord;
  const server = createServer((req, res) => void handle(req, res));
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/gateway' || url.searchParams.get('encoding') !== 'json' || url.searchParams.has('compress')) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => gw.onSocket(ws));
  });

  const reply = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    if (body === undefined) {
      res.writeHead(status, headers);
      res.end();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, message: string, code = 0) => reply(res, status, { message, code });
  /**
   * Discord's rules for message components, as far as buttons go: at most 5 action rows (type 1) of at most 5
   * buttons (type 2); a link button (style 5) has a url and no custom_id, the others a custom_id of 1 to 100
   * characters, unique in the message; a label of at most 80. Returns what is wrong, or undefined.
   */
  const badComponents = (rows: unknown): string | undefined => {
    if (rows === undefined) return undefined;
    if (!Array.isArray(rows) || rows.length > 5) return 'components: Must be an array of 5 or fewer action rows';
    const ids = new Set<string>();
    for (const row of rows as Array<{ type?: number; components?: unknown }>) {
      if (row?.type !== 1 || !Array.isArray(row.components) || !row.components.length || row.components.length > 5)
        return 'components: an action row (type 1) holds 1 to 5 components';
      for (const b of row.components as Array<{ type?: number; style?: number; custom_id?: string; url?: string; label?: string }>) {
        if (b?.type !== 2 || ![1, 2, 3, 4, 5].includes(Number(b.style))) return 'components: not a button';
        if ((b.label ?? '').length > 80) return 'components: label: Must be 80 or fewer in length.';
        if (b.style === 5 ? !b.url || b.custom_id !== undefined : !b.custom_id || b.custom_id.length > 100 || b.url !== undefined)
          return 'components: a link button has a url, any other a custom_id of 1 to 100 characters';
        if (b.custom_id) {
          if (ids.has(b.custom_id)) return 'components: custom_id must be unique';
          ids.add(b.custom_id);
        }
      }
    }
    return undefined;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://x');
    const cdn = cdnFiles.get(url.pathname);
    if (cdn && req.method === 'GET') {
      fake.cdnRequests.push(url.pathname);
      if (fake.cdnGate) await fake.cdnGate;
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(cdn);
      return;
    }
    if (!url.pathname.startsWith('/api/v10/')) return error(res, 404, '404: Not Found');
    const path = url.pathname.slice('/api/v10'.length);
    const method = req.method ?? 'GET';
    const ct = String(req.headers['content-type'] ?? '');
    let body: any = {};
    const files: DcCall['files'] = [];
    if (ct.startsWith('multipart/form-data')) {
      const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(ct);
      for (const part of splitMultipart(raw, boundary?.[1] ?? boundary?.[2] ?? '')) {
        const name = /name="([^"]+)"/.exec(part.head)?.[1];
        const filename = /filename="([^"]*)"/.exec(part.head)?.[1];
        if (name === 'payload_json') body = JSON.parse(part.body.toString('utf8'));
        else if (filename !== undefined) files.push({ name: filename, size: part.body.length });
      }
    } else if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return error(res, 400, '400: Bad Request', 50109);
      }
    }
    const call: DcCall = {
      method,
      path,
      route: route(method, path),
      query: url.searchParams,
      body,
      files,
      auth: req.headers.authorization,
    };
    const verdict = fake.onCall?.(call);
    if (verdict === 'hold') return; // never answered, never recorded: the platform did not accept it
    fake.calls.push(call);
    if (!path.startsWith('/interactions/') && !path.startsWith('/webhooks/') && call.auth !== `Bot ${token}`)
      return error(res, 401, '401: Unauthorized');
    const f = failures.find((x) => x.route === call.route);
    let lostAnswer: FailSpec | undefined;
    if (f && f.after === 0 && f.error.afterCreate) {
      if (--f.count <= 0) failures.splice(failures.indexOf(f), 1);
      lostAnswer = f.error;
    } else if (f) {
      if (f.after > 0) f.after--;
      else {
        if (--f.count <= 0) failures.splice(failures.indexOf(f), 1);
        if (f.error.status === 429) {
          const ra = f.error.retryAfter ?? 1;
          return reply(
            res,
            429,
            { message: 'You are being rate limited.', retry_after: ra, global: false },
            { 'retry-after': String(ra), 'x-ratelimit-scope': 'user' },
          );
        }
        return error(res, f.error.status, f.error.message ?? `${f.error.status}: error`, f.error.code ?? 0);
      }
    }
    const seg = path.split('/').filter(Boolean);
    const addr = server.address() as AddressInfo;

    if (method === 'GET' && path === '/gateway/bot') {
      return reply(res, 200, {
        url: `ws://127.0.0.1:${addr.port}/gateway`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 },
      });
    }
    if (method === 'GET' && path === '/users/@me') return reply(res, 200, bot);
    if (method === 'POST' && path === '/users/@me/channels') {
      const rid = String(body.recipient_id ?? '');
      if (!/^\d{17,20}$/.test(rid)) return error(res, 400, 'Invalid Form Body', 50035);
      const cid = `5${rid.slice(1)}`;
      if (!channels.has(cid)) channels.set(cid, { id: cid, type: 1, recipients: [user(rid)] });
      return reply(res, 200, channels.get(cid));
    }
    if (seg[0] === 'applications' && seg[2] === 'commands' && method === 'PUT') {
      fake.commands = (Array.isArray(body) ? body : []).map((c: { name: string; description: string }) => ({
        name: c.name,
        description: c.description,
      }));
      return reply(
        res,
        200,
        fake.commands.map((c) => ({ ...c, id: snowflake(), application_id: applicationId, type: 1, version: '1' })),
      );
    }
    if (seg[0] === 'interactions' && seg[3] === 'callback' && method === 'POST') {
      const it = interactions.get(seg[2]!);
      if (!it || it.id !== seg[1]) return error(res, 404, 'Unknown interaction', 10062);
      if (it.acked) return error(res, 400, 'Interaction has already been acknowledged.', 40060);
      // UPDATE_MESSAGE (7) edits the message whose button was tapped; DEFERRED_UPDATE_MESSAGE (6) changes nothing yet.
      if (body.type === 7 || body.type === 6) {
        if (!it.message) return error(res, 400, 'Interaction is not on a message (a button tap)', 50035);
        const bad = badComponents(body.data?.components);
        if (bad) return error(res, 400, `Invalid Form Body: ${bad}`, 50035);
      }
      it.acked = true;
      if (body.type === 7 && it.message) editStored(it.message, body.data ?? {});
      fake.interactionReplies.set(seg[1]!, body);
      fake.interactionLog.push({
        id: it.id,
        kind: 'callback',
        type: body.type,
        ...(body.data?.content ? { content: body.data.content } : {}),
      });
      return reply(res, 204);
    }
    if (seg[0] === 'webhooks' && seg[3] === 'messages' && seg[4] === '@original' && method === 'PATCH') {
      const it = interactions.get(seg[2]!);
      if (seg[1] !== applicationId || !it) return error(res, 404, 'Unknown Webhook', 10015);
      if (!it.acked) return error(res, 404, 'Unknown Message', 10008);
      const bad = badComponents(body.components);
      if (bad) return error(res, 400, `Invalid Form Body: ${bad}`, 50035);
      // For a button tap, the original response is the message the button sits on: it is that message that changes.
      if (it.message) {
        const m = editStored(it.message, body);
        fake.interactionEdits.set(it.id, body);
        fake.interactionLog.push({ id: it.id, kind: 'edit', content: String(body.content ?? '') });
        return reply(res, 200, m);
      }
      fake.interactionEdits.set(it.id, body);
      fake.interactionLog.push({ id: it.id, kind: 'edit', content: String(body.content ?? '') });
      return reply(res, 200, { id: snowflake(), channel_id: channelId, content: String(body.content ?? ''), author: bot, type: 20 });
    }
    if (seg[0] === 'webhooks' && seg.length === 3 && method === 'POST') {
      // A follow-up message of an interaction (ephemeral with flag 64: only the user who acted sees it).
      const it = interactions.get(seg[2]!);
      if (seg[1] !== applicationId || !it) return error(res, 404, 'Unknown Webhook', 10015);
      if (!it.acked) return error(res, 400, 'Interaction has not been acknowledged', 40060);
      const content = String(body.content ?? '');
      if (!content) return error(res, 400, 'Cannot send an empty message', 50006);
      fake.interactionFollowups.push({ id: it.id, content, flags: Number(body.flags ?? 0) });
      fake.interactionLog.push({ id: it.id, kind: 'followup', content });
      return reply(res, 200, {
        id: snowflake(),
        channel_id: it.message?.channel_id ?? channelId,
        content,
        author: bot,
        type: 0,
        flags: body.flags ?? 0,
      });
    }
    if (seg[0] === 'channels' && seg[1]) {
      const cid = seg[1];
      const ch = channels.get(cid);
      if (!ch) return error(res, 404, 'Unknown Channel', 10003);
      if (seg[2] === 'threads' && seg[3] === 'archived' && seg[4] === 'public' && seg.length === 5 && method === 'GET') {
        // Discord: the channel's public archived threads, the most recently archived first, before `before` (an
        // ISO time); needs Read Message History. The answer is what was archived when the request came (a gate only
        // delays it).
        if (fake.noHistoryAccess.has(cid)) return error(res, 403, 'Missing Access', 50001);
        const before = url.searchParams.get('before');
        const limit = Math.min(100, Math.max(2, Number(url.searchParams.get('limit') ?? 50)));
        const archivedAt = (c: Record<string, unknown>) =>
          Date.parse(String((c.thread_metadata as { archive_timestamp?: string }).archive_timestamp));
        const all = [...channels.values()]
          .filter((c) => c.parent_id === cid && (c.thread_metadata as { archived?: boolean } | undefined)?.archived)
          .filter((c) => !before || archivedAt(c) < Date.parse(before))
          .sort((a, b) => archivedAt(b) - archivedAt(a));
        const threads = all.slice(0, limit).map((c) => ({ ...c, last_message_id: history.get(String(c.id))?.at(-1)?.id ?? null }));
        const gate = fake.historyGates.get(cid);
        if (gate) await gate;
        return reply(res, 200, { threads, members: [], has_more: all.length > limit });
      }
      if (seg.length === 2 && method === 'GET') return reply(res, 200, ch);
      if (seg[2] === 'typing' && method === 'POST') return reply(res, 204);
      if (seg[2] === 'messages' && seg.length === 3 && method === 'GET') {
        const gate = fake.historyGates.get(cid);
        if (gate) await gate;
        if (fake.noHistoryAccess.has(cid)) return error(res, 403, 'Missing Access', 50001);
        const after = url.searchParams.get('after');
        const before = url.searchParams.get('before');
        const limit = Math.min(100, Number(url.searchParams.get('limit') ?? 50));
        const all = history.get(cid) ?? [];
        // Discord answers `after` with the oldest `limit` messages after it, newest first; otherwise the newest
        // `limit` (before `before`), newest first.
        if (after)
          return reply(
            res,
            200,
            all
              .filter((m) => BigInt(m.id) > BigInt(after))
              .slice(0, limit)
              .reverse(),
          );
        const older = all.filter((m) => !before || BigInt(m.id) < BigInt(before));
        return reply(res, 200, older.slice(-limit).reverse());
      }
      if (seg[2] === 'messages' && seg.length === 3 && method === 'POST') {
        const content = String(body.content ?? '');
        if (!content && !files.length) return error(res, 400, 'Cannot send an empty message', 50006);
        if (content.length > 2000) return error(res, 400, 'Invalid Form Body: content: Must be 2000 or fewer in length.', 50035);
        const bad = badComponents(body.components);
        if (bad) return error(res, 400, `Invalid Form Body: ${bad}`, 50035);
        if (body.nonce !== undefined && String(body.nonce).length > 25)
          return error(res, 400, 'Invalid Form Body: nonce: Must be 25 or fewer in length.', 50035);
        const nk = body.nonce !== undefined && body.enforce_nonce ? `${cid}:${body.nonce}` : undefined;
        if (nk && nonces.has(nk)) return reply(res, 200, nonces.get(nk));
        const m: DcMessage = {
          id: snowflake(),
          channel_id: cid,
          ...(ch.guild_id ? { guild_id: ch.guild_id } : {}),
          content,
          author: bot,
          ...(body.nonce !== undefined ? { nonce: String(body.nonce) } : {}),
          ...(body.message_reference ? { message_reference: body.message_reference } : {}),
          attachments: files.map((x) => ({ id: snowflake(), filename: x.name, size: x.size })),
          mentions: [],
          timestamp: new Date().toISOString(),
          type: body.message_reference ? 19 : 0,
          tts: false,
          mention_everyone: false,
          mention_roles: [],
          embeds: [],
          pinned: false,
          flags: 0,
          ...(Array.isArray(body.components) && body.components.length ? { components: body.components } : {}),
        };
        if (nk) nonces.set(nk, m);
        fake.sent.push(m);
        store(m);
        // Discord echoes the bot's own message on the gateway; the bot must ignore it.
        dispatch('MESSAGE_CREATE', m);
        if (verdict === 'accept-and-hold') return;
        if (lostAnswer) return error(res, lostAnswer.status, lostAnswer.message ?? `${lostAnswer.status}: error`);
        return reply(res, 200, m);
      }
      if (seg[2] === 'messages' && seg[3]) {
        const m = (history.get(cid) ?? []).find((x) => x.id === seg[3]);
        if (!m) return error(res, 404, 'Unknown Message', 10008);
        if (seg[4] === 'reactions' && method === 'PUT') return reply(res, 204);
        if (seg.length === 4 && method === 'GET') {
          if (fake.noHistoryAccess.has(cid)) return error(res, 403, 'Missing Access', 50001);
          return reply(res, 200, m);
        }
        if (seg.length === 4 && method === 'PATCH') {
          if (m.author.id !== bot.id) return error(res, 403, 'Cannot edit a message authored by another user', 50005);
          const bad = badComponents(body.components);
          if (bad) return error(res, 400, `Invalid Form Body: ${bad}`, 50035);
          editStored(m, body);
          return reply(res, 200, m);
        }
        if (seg.length === 4 && method === 'DELETE') {
          history.set(
            cid,
            (history.get(cid) ?? []).filter((x) => x !== m),
          );
          return reply(res, 204);
        }
      }
    }
    return error(res, 404, '404: Not Found');
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;

  fake = {
    apiUrl: `http://127.0.0.1:${port}/api`,
    token,
    bot: { id: bot.id, username: bot.username },
    applicationId,
    guildId,
    channelId,
    calls: [],
    sent: [],
    commands: [],
    interactionReplies: new Map(),
    interactionEdits: new Map(),
    interactionLog: [],
    interactionFollowups: [],
    cdnGate: undefined,
    historyGates: new Map(),
    archiveThread(threadId, at = Date.now()) {
      const t = channels.get(threadId);
      if (!t?.thread_metadata) throw new Error(`no thread ${threadId}`);
      t.thread_metadata = { ...(t.thread_metadata as object), archived: true, archive_timestamp: new Date(at).toISOString() };
    },
    noHistoryAccess: new Set(),
    cdnRequests: [],
    gateway: gw.stats,
    heartbeatMs: o.heartbeatMs ?? 500,
    get identifyCloseCode() {
      return gw.identifyCloseCode;
    },
    set identifyCloseCode(v) {
      gw.identifyCloseCode = v;
    },
    get deaf() {
      return gw.deaf;
    },
    get withholdMessages() {
      return gw.withholdMessages;
    },
    set withholdMessages(v) {
      gw.withholdMessages = v;
    },
    set deaf(v) {
      gw.deaf = v;
    },
    pushMessage(content, p = {}) {
      const userId = p.userId ?? '400000000000000004';
      let cid = p.channelId ?? channelId;
      if (p.dm) {
        cid = p.channelId ?? `5${userId.slice(1)}`;
        if (!channels.has(cid)) channels.set(cid, { id: cid, type: 1, recipients: [user(userId)] });
      } else if (!channels.has(cid))
        channels.set(
          cid,
          p.threadOf
            ? {
                id: cid,
                type: 11,
                guild_id: guildId,
                parent_id: p.threadOf,
                name: `t${cid.slice(-4)}`,
                owner_id: userId,
                thread_metadata: {
                  archived: false,
                  auto_archive_duration: 1440,
                  archive_timestamp: new Date().toISOString(),
                  locked: false,
                },
                member_count: 1,
                message_count: 0,
              }
            : { id: cid, type: 0, guild_id: guildId, name: `c${cid.slice(-4)}` },
        );
      const guild = !p.dm;
      const id = snowflake(p.at);
      const attachments: DcMessage['attachments'] = [];
      if (p.attachment) {
        const path = `/attachments/${cid}/${id}/${p.attachment.filename}`;
        if (!p.attachment.missing) cdnFiles.set(path, p.attachment.data);
        attachments.push({
          id: snowflake(),
          filename: p.attachment.filename,
          size: p.attachment.data.length,
          url: `http://127.0.0.1:${port}${path}`,
          ...(p.attachment.contentType ? { content_type: p.attachment.contentType } : {}),
        } as never);
      }
      const m: DcMessage = {
        id,
        channel_id: cid,
        ...(guild
          ? {
              guild_id: guildId,
              member: { roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0, nick: p.nick ?? null },
            }
          : {}),
        content: p.mention ? `<@${bot.id}> ${content}` : p.mentionRole ? `<@&${roleOf(p.mentionRole)}> ${content}` : content,
        author: user(userId),
        attachments,
        mentions: [],
        timestamp: new Date(p.at ?? Date.now()).toISOString(),
        edited_timestamp: null,
        type: p.replyTo ? 19 : 0,
        ...(p.replyTo
          ? {
              message_reference: { message_id: p.replyTo, channel_id: cid },
              referenced_message: (history.get(cid) ?? []).find((x) => x.id === p.replyTo) ?? null,
            }
          : {}),
        tts: false,
        mention_everyone: false,
        mention_roles: p.mentionRole ? [roleOf(p.mentionRole)] : [],
        embeds: [],
        pinned: false,
        flags: 0,
      };
      if (p.forward) {
        m.message_reference = { type: 1, message_id: snowflake(p.forward.at), channel_id: '1170000000000000099' };
        m.message_snapshots = [
          {
            message: {
              type: 0,
              content: p.forward.content,
              timestamp: new Date(p.forward.at ?? Date.now()).toISOString(),
              attachments: [],
              embeds: [],
              mentions: [],
              flags: 0,
            },
          },
        ];
      }
      // As Discord: a message in a thread carries its approximate place there.
      if (channels.get(cid)?.type === 11) m.position = (history.get(cid) ?? []).length;
      // As Discord: every user the content mentions (`<@id>`, `<@!id>`), once each.
      const mentioned = [...new Set([...String(m.content).matchAll(/<@!?(\d+)>/g)].map((x) => x[1]!))];
      m.mentions = mentioned.map((id) =>
        id === bot.id ? { id: bot.id, username: bot.username, discriminator: '0', avatar: null } : user(id),
      );
      store(m);
      if (!p.historyOnly) dispatch('MESSAGE_CREATE', m);
      return m;
    },
    editMessage(id, content, p = {}) {
      const m = [...history.values()].flat().find((x) => x.id === id);
      if (!m) throw new Error(`editMessage: no message ${id}`);
      if (p.embedOnly) m.embeds = [{ type: 'link', url: 'https://example.com', title: 'Example' }] as never;
      else {
        m.content = p.mention ? `<@${bot.id}> ${content}` : content;
        m.edited_timestamp = new Date(p.at ?? Date.now()).toISOString();
        const mentioned = [...new Set([...String(m.content).matchAll(/<@!?(\d+)>/g)].map((x) => x[1]!))];
        m.mentions = mentioned.map((uid) =>
          uid === bot.id ? { id: bot.id, username: bot.username, discriminator: '0', avatar: null } : user(uid),
        );
      }
      dispatch('MESSAGE_UPDATE', m);
      return m;
    },
    deleteMessage(id) {
      for (const [cid, list] of history) {
        const i = list.findIndex((x) => x.id === id);
        if (i < 0) continue;
        list.splice(i, 1);
        const guild = channels.get(cid)?.guild_id;
        dispatch('MESSAGE_DELETE', { id, channel_id: cid, ...(guild ? { guild_id: guild } : {}) });
        return;
      }
      throw new Error(`deleteMessage: no message ${id}`);
    },
    pushCommand(name, p = {}) {
      const id = snowflake();
      const itoken = `itok-${id}`;
      const userId = p.userId ?? '400000000000000004';
      const cid = p.channelId ?? channelId;
      const payload = {
        id,
        token: itoken,
        application_id: applicationId,
        type: 2,
        version: 1,
        channel_id: cid,
        guild_id: guildId,
        channel: { id: cid, type: 0, guild_id: guildId },
        member: {
          user: user(userId),
          roles: [],
          permissions: '0',
          joined_at: new Date().toISOString(),
          deaf: false,
          mute: false,
          flags: 0,
        },
        data: { id: snowflake(), name, type: 1 },
        locale: 'en-US',
        app_permissions: '0',
        entitlements: [],
        authorizing_integration_owners: {},
        context: 0,
      };
      interactions.set(itoken, { id, payload, acked: false });
      dispatch('INTERACTION_CREATE', payload);
      return { id, token: itoken };
    },
    pushButton(message, customId, p = {}) {
      const id = snowflake();
      const itoken = `itok-${id}`;
      const userId = p.userId ?? '400000000000000004';
      const ch = channels.get(message.channel_id);
      const inGuild = ch?.guild_id !== undefined;
      const who = user(userId);
      const payload = {
        id,
        token: itoken,
        application_id: applicationId,
        type: 3,
        version: 1,
        channel_id: message.channel_id,
        ...(inGuild ? { guild_id: ch!.guild_id } : {}),
        channel: { id: message.channel_id, type: ch?.type ?? 0, ...(inGuild ? { guild_id: ch!.guild_id } : {}) },
        // As Discord: a member in a server, a user in a direct message.
        ...(inGuild
          ? { member: { user: who, roles: [], permissions: '0', joined_at: new Date().toISOString(), deaf: false, mute: false, flags: 0 } }
          : { user: who }),
        message,
        data: { custom_id: customId, component_type: 2 },
        locale: 'en-US',
        app_permissions: '0',
        entitlements: [],
        authorizing_integration_owners: {},
        context: inGuild ? 0 : 1,
      };
      interactions.set(itoken, { id, payload, acked: false, message: { id: message.id, channel_id: message.channel_id } });
      dispatch('INTERACTION_CREATE', payload);
      return { id, token: itoken };
    },
    redeliverCommand(id) {
      const it = [...interactions.values()].find((x) => x.id === id);
      if (!it) throw new Error(`no interaction ${id}`);
      dispatch('INTERACTION_CREATE', it.payload);
    },
    failNext(r, e, count = 1, after = 0) {
      failures.push({ route: r, error: e, count, after });
    },
    drop: () => gw.drop(),
    silence: () => gw.silence(),
    callsOf: (r) => fake.calls.filter((c) => c.route === r),
    sentTo: (cid) => fake.sent.filter((m) => m.channel_id === cid),
    async close() {
      gw.drop();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return fake;
}
