/**
 * SPEC's public identifiers, held verbatim (SPEC part 1, "Identifiers are the contract"): every configuration key
 * SPEC names is declared by the kernel or a built-in manifest with SPEC's environment variables, SPEC's default
 * (where SPEC gives one) and SPEC's policy class (where SPEC states one); every skill SPEC names is declared with
 * the parameter names SPEC prints. Read from the manifests only: no kernel, no plugin code runs.
 * A SPEC audit (2026-12-07) found these exact; this test keeps them so. REST, WebSocket and CLI names are held by
 * the gateway and CLI tests.
 */
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KERNEL_KEYS } from '../../kernel/config/kernel-keys.js';
import type { ConfigKeySpec, PluginManifest } from '../../sdk/types.js';

const PLUGINS = join(import.meta.dirname, '..', '..', 'plugins');

async function manifests(): Promise<PluginManifest[]> {
  const out: PluginManifest[] = [];
  for (const d of readdirSync(PLUGINS)) {
    const f = join(PLUGINS, d, 'manifest.ts');
    if (existsSync(f)) out.push(((await import(f)) as { default: PluginManifest }).default);
  }
  return out;
}

/** [key, SPEC's environment variables, SPEC's default (undefined: SPEC gives none), SPEC's class (undefined: none stated)]. */
type Row = [string, string[], unknown, ('SAFE' | 'APPROVAL' | 'LOCKED')?];
const none = undefined;
const KEYS: Row[] = [
  // Gateway
  ['gatewayPort', [], 3100],
  ['gatewayHost', [], '0.0.0.0'],
  ['gatewayApiKey', [], none],
  ['gatewayStaticDir', [], none],
  ['gatewayAutoStart', [], false],
  ['gatewayCorsOrigins', [], ['*']],
  // Models and providers
  ['llmProvider', [], none, 'SAFE'],
  ['modelName', [], none, 'SAFE'],
  ['providerModelNames', [], none],
  ['fallbackModelNames', [], none],
  ['fastModelName', [], none],
  ...(['A', 'B', 'C', 'E', 'F'] as const).map((x): Row => [`provider${x}ApiKey`, [`PROVIDER${x}_API_KEY`], none, 'APPROVAL']),
  ...(['H', 'I', 'J', 'K'] as const).map((x): Row => [`provider${x}ApiKey`, [`PROVIDER${x}_API_KEY`], none]),
  ['providerDRegion', ['PROVIDERD_REGION', 'AWS_REGION'], none],
  ['providerDAccessKeyId', ['PROVIDERD_ACCESS_KEY_ID', 'AWS_ACCESS_KEY_ID'], none, 'LOCKED'],
  ['providerDSecretAccessKey', ['PROVIDERD_SECRET_ACCESS_KEY', 'AWS_SECRET_ACCESS_KEY'], none, 'LOCKED'],
  ['providerDSessionToken', ['PROVIDERD_SESSION_TOKEN', 'AWS_SESSION_TOKEN'], none],
  ['providerEBaseUrl', ['PROVIDERE_BASE_URL'], none],
  ['providerEReferer', ['PROVIDERE_REFERER'], none],
  ['providerEAppName', ['PROVIDERE_APP_NAME'], none],
  ['providerGEnabled', [], false],
  ['providerGApiUrl', [], 'http://127.0.0.1:11434', 'SAFE'],
  ['providerBComputerUseEnabled', [], false],
  ['providerBComputerUseModel', [], none],
  ['searchAApiKey', ['SEARCHA_API_KEY'], none, 'APPROVAL'],
  ['searchBApiKey', ['SEARCHB_API_KEY'], none, 'APPROVAL'],
  ['captchaApiKey', ['CAPTCHA_API_KEY'], none],
  // Agent behaviour
  ['memoryContextLimit', [], 50, 'SAFE'],
  ['memoryEpisodicLimit', [], 200],
  ['maxStepsPerAction', [], none, 'SAFE'],
  ['autonomyEnabled', [], none, 'APPROVAL'],
  ['autonomyInterval', [], none, 'APPROVAL'],
  ['autonomyAllowedChannels', [], none],
  ['progressFeedbackEnabled', [], none, 'SAFE'],
  ['progressFeedbackTypingOnly', [], none],
  ['searchProviderOrder', [], none, 'SAFE'],
  ['skillRoutingRules', [], none, 'APPROVAL'],
  ['enableSelfModification', [], none, 'LOCKED'],
  ['tokenUsagePath', [], '$KEEL_HOME/token-usage-summary.json'],
  ['tokenLogPath', [], '$KEEL_HOME/token-usage.log'],
  // Sessions
  ['sessionScope', [], 'per-channel-peer'],
  ['identityLinks', [], {}],
  // Channels
  ['chatAToken', ['CHATA_TOKEN'], none, 'LOCKED'],
  ['chatAAutoReplyEnabled', [], false],
  ['chatACommands', [], none],
  ['chatBEnabled', [], false, 'LOCKED'],
  ['chatBSessionPath', [], '$KEEL_HOME/chatB-session'],
  ['chatBAutoReplyEnabled', [], false],
  ['chatBOwnerJID', [], none],
  ['chatBStatusReplyEnabled', [], false],
  ['chatBAutoReactEnabled', [], false],
  ['chatBContextProfilingEnabled', [], false],
  ['chatCToken', ['CHATC_TOKEN'], none, 'LOCKED'],
  ['chatCAutoReplyEnabled', [], false],
  ['chatDBotToken', ['CHATD_BOT_TOKEN'], none, 'LOCKED'],
  ['chatDAppToken', ['CHATD_APP_TOKEN'], none, 'LOCKED'],
  ['chatDSigningSecret', ['CHATD_SIGNING_SECRET'], none, 'LOCKED'],
  ['chatDAutoReplyEnabled', [], false],
  ['emailEnabled', [], false],
  ['emailAutoReplyEnabled', [], false],
  ['emailAddress', ['EMAIL_ADDRESS'], none],
  ['emailFromName', [], none],
  ['emailDefaultSubject', [], 'keel response'],
  ['emailSocketTimeoutMs', ['EMAIL_SOCKET_TIMEOUT_MS'], 15000],
  ['smtpHost', ['SMTP_HOST'], none],
  ['smtpPort', ['SMTP_PORT'], 587],
  ['smtpSecure', ['SMTP_SECURE'], false],
  ['smtpStartTls', ['SMTP_STARTTLS'], true],
  ['smtpUsername', ['SMTP_USERNAME'], none],
  ['smtpPassword', ['SMTP_PASSWORD'], none],
  ['imapHost', ['IMAP_HOST'], none],
  ['imapPort', ['IMAP_PORT'], 993],
  ['imapSecure', ['IMAP_SECURE'], true],
  ['imapUsername', ['IMAP_USERNAME'], none],
  ['imapPassword', ['IMAP_PASSWORD'], none],
  ['adminUsers', [], none, 'LOCKED'],
  // Security
  ['safeMode', [], false, 'LOCKED'],
  ['sudoMode', [], false, 'LOCKED'],
  ['overrideMode', [], false, 'LOCKED'],
  ['commandAllowList', [], none],
  ['commandDenyList', [], none, 'LOCKED'],
  ['commandTimeoutMs', [], 120000],
  ['commandRetries', [], 1],
  ['commandWorkingDir', [], none],
  ['autoExecuteCommands', [], false],
  ['pluginAllowList', [], []],
  ['pluginDenyList', [], []],
  ['pluginHealthCheckIntervalMinutes', [], 15],
  ['usagePingEnabled', [], true],
  ['usagePingUrl', [], ''],
  ['usagePingTimeoutMs', [], 4000],
  ['usagePingToken', [], ''],
];

/** SPEC's skills with the parameter names it prints (required ones first, marked by `!`). */
const SKILLS: Record<string, string[]> = {
  recall_memory: ['query!', 'limit'],
  update_user_profile: ['info_text!'],
  update_learning: ['topic!', 'knowledge_content'],
  update_journal: ['entry_text!'],
  deep_reason: ['topic!'],
  rag_ingest: ['content!', 'source!', 'collection', 'title', 'tags', 'format'],
  rag_ingest_file: ['file_path!', 'collection', 'tags', 'title'],
  rag_ingest_url: ['url!', 'collection', 'tags', 'title'],
  rag_search: ['query!', 'limit', 'collection', 'tags'],
  rag_list: ['collection'],
  rag_delete: ['document_id', 'collection'],
  browser_navigate: ['url!'],
  browser_examine_page: [],
  browser_back: [],
  browser_click: ['selector_or_ref!'],
  browser_type: ['selector_or_ref!', 'text!', 'slow'],
  browser_press: ['key!'],
  browser_hover: ['selector!'],
  browser_select: ['selector!', 'value!'],
  browser_scroll: ['direction!', 'amount'],
  browser_wait: ['ms!'],
  browser_wait_for: ['selector!', 'timeout'],
  browser_screenshot: ['fullPage'],
  browser_vision: ['prompt'],
  browser_solve_captcha: [],
  browser_run_js: ['script!'],
  browser_run_script: ['code!'],
  switch_browser_profile: ['profileName!', 'profileDir'],
  switch_browser_engine: ['engine!', 'endpoint'],
  set_viewport_mode: ['mode!'],
  send_chatA: ['chatId!', 'message!'],
  send_chatB: ['jid!', 'message!'],
  send_chatC: ['channel_id!', 'message!'],
  send_chatD: ['channel_id!', 'message!'],
  send_email: ['to!', 'message!', 'subject', 'inReplyTo', 'references'],
  send_file: ['jid!', 'path!', 'caption', 'channel'],
  send_voice_note: ['jid!', 'text!', 'voice'],
  send_image: ['jid!', 'prompt!', 'channel', 'size', 'quality', 'caption'],
  chatA_send_buttons: ['chatId!', 'message!', 'buttons!'],
  chatA_send_poll: ['chatId!', 'question!', 'options!', 'isAnonymous', 'allowsMultipleAnswers'],
  chatA_edit_message: ['chatId!', 'messageId!', 'newText!'],
  chatA_react: ['chatId!', 'messageId!', 'emoji'],
  chatA_pin_message: ['chatId!', 'messageId!', 'silent'],
  react: ['message_id!', 'emoji!', 'channel', 'chat_id'],
  search_emails: ['query', 'sender', 'subject', 'daysAgo', 'unreadOnly', 'limit'],
  fetch_email: ['uid!'],
  index_emails_to_knowledge_base: ['query', 'sender', 'subject', 'daysAgo', 'unreadOnly', 'limit', 'collection'],
  generate_email_report: ['topic!', 'emails', 'sender', 'subject', 'daysAgo'],
  web_search: ['query!', 'maxResults'],
  run_command: ['command!', 'args', 'cwd'],
  manage_config: ['action!', 'detail', 'key', 'value', 'reason'],
  http_fetch: [],
  extract_article: [],
  generate_image: [],
  schedule_task: [],
  create_custom_skill: [],
  spawn_agent: [],
  delegate_task: [],
  system_check: [],
  self_repair_skill: [],
  execute_typescript: [],
};
const ADMIN_ONLY = [
  'run_command',
  'create_custom_skill',
  'manage_config',
  'spawn_agent',
  'delegate_task',
  'system_check',
  'self_repair_skill',
  'execute_typescript',
  'browser_run_script',
];

describe('SPEC identifiers', async () => {
  const all = await manifests();
  const declared = new Map<string, ConfigKeySpec>(Object.entries(KERNEL_KEYS) as Array<[string, ConfigKeySpec]>);
  for (const m of all) for (const [k, s] of Object.entries(m.config ?? {})) declared.set(k, s as ConfigKeySpec);
  const skills = new Map(all.flatMap((m) => (m.skills ?? []).map((s) => [s.name, s] as const)));

  it.each(KEYS)('config key %s: declared with SPEC env %j, default and class', (key, env, dflt, policy) => {
    const s = declared.get(key);
    expect(s, `${key} is not declared by the kernel or any built-in manifest`).toBeDefined();
    for (const e of env) expect(s?.env ?? [], `${key} must read ${e}`).toContain(e);
    if (dflt !== undefined) expect(s?.default).toEqual(dflt);
    if (policy) expect(s?.policy).toBe(policy);
  });

  it('commandAllowList and commandDenyList start from SPEC lists (the deny list adds unlink and shred)', () => {
    const allow = declared.get('commandAllowList')?.default as string[];
    const deny = declared.get('commandDenyList')?.default as string[];
    // biome-ignore format: SPEC's order
    expect(allow).toEqual(['npm', 'node', 'npx', 'git', 'python', 'pip', 'pip3', 'curl', 'wget', 'powershell', 'pwsh', 'bash', 'apt', 'apt-get', 'yum', 'brew', 'systemctl', 'service', 'cat', 'ls', 'dir', 'echo', 'mkdir', 'touch', 'cp', 'mv', 'grep', 'find', 'which', 'whoami', 'uname', 'hostname', 'keel']);
    // biome-ignore format: SPEC's order
    expect(deny.slice(0, 13)).toEqual(['rm', 'rmdir', 'del', 'erase', 'format', 'mkfs', 'dd', 'shutdown', 'reboot', 'poweroff', 'reg', 'diskpart', 'netsh']);
  });

  it.each(Object.entries(SKILLS))('skill %s: declared with SPEC parameter names %j', (name, params) => {
    const s = skills.get(name);
    expect(s, `skill ${name} is not declared by any built-in manifest`).toBeDefined();
    const schema = s?.parameters as { properties?: Record<string, { default?: unknown }>; required?: string[] } | undefined;
    const props = schema?.properties ?? {};
    for (const p of params) {
      const bare = p.replace(/!$/, '');
      expect(Object.keys(props), `${name} lacks parameter ${bare}`).toContain(bare);
      // A SPEC-required parameter must be required; an optional one may only be "required" when ajv fills its default.
      const required = (schema?.required ?? []).includes(bare);
      if (p.endsWith('!')) expect(required, `${name}.${bare} must be required`).toBe(true);
      else if (required) expect(props[bare]?.default, `${name}.${bare} is optional in SPEC`).toBeDefined();
    }
  });

  it.each(ADMIN_ONLY)('skill %s is admin only', (name) => {
    expect(skills.get(name)?.adminOnly).toBe(true);
  });
});
