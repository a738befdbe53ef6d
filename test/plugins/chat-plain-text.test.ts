/**
 * What the agent reads of a Slack or Discord message: Slack's escaping (`&amp;`, `&lt;`, `&gt;`, also in code) and
 * control sequences (`<@U…>`, `<#C…|name>`, `<!here>`, `<url|label>`, `<!date^…|fallback>`) and Discord's mentions,
 * custom emoji and timestamps become what the person wrote or saw; the bot's own mention is dropped; the rest stays.
 * And what each channel quotes of the message a reply answers (docs/channels.md, "Quoted messages").
 */
import { describe, expect, it } from 'vitest';
import { quoteOf as telegramQuote } from '../../plugins/chatA/src/inbound.js';
import { discordPlainText, quoteOf as discordQuote } from '../../plugins/chatC/src/inbound.js';
import { slackPlainText } from '../../plugins/chatD/src/inbound.js';
import { quoteOf as slackQuote } from '../../plugins/chatD/src/quoted.js';

describe('slackPlainText', () => {
  it.each([
    ['run `ls &gt; out.txt &amp;&amp; cat out.txt`', 'run `ls > out.txt && cat out.txt`'],
    ['if a &lt; b then b &gt; a', 'if a < b then b > a'],
    // What the person typed as an entity stays one (Slack escaped its "&").
    ['the html entity &amp;lt; means <', 'the html entity &lt; means <'],
    ['<@U0BOT> hello', ' hello'],
    ['<@U0BOT|keel> hello', ' hello'],
    ['ask <@U0BOB> and <@U0ANN|ann>', 'ask @U0BOB and @ann'],
    ['see <#C0GENERAL|general> and <#C0OTHER>', 'see #general and #C0OTHER'],
    ['<!here> <!channel> <!everyone> <!here|@here>', '@here @channel @everyone @here'],
    ['<!subteam^S0DEV|@devs> and <!subteam^S0OPS>', '@devs and @S0OPS'],
    ['due <!date^1392734382^{date_short}|Feb 18, 2014>', 'due Feb 18, 2014'],
    ['due <!date^0^{date}>', 'due 1970-01-01T00:00:00.000Z'],
    ['<https://example.com/?a=1&amp;b=2|the page>', 'the page (https://example.com/?a=1&b=2)'],
    ['<https://example.com/x>', 'https://example.com/x'],
    ['<https://example.com|example.com>', 'example.com'],
    ['<mailto:ann@example.com|ann@example.com>', 'ann@example.com'],
    ['```\ndef f(x):\n    return x &lt; 2\n```', '```\ndef f(x):\n    return x < 2\n```'],
    ['no markup at all', 'no markup at all'],
  ])('%j', (raw, plain) => {
    expect(slackPlainText(raw, 'U0BOT')).toBe(plain);
  });
});

describe('discordPlainText', () => {
  const o = {
    botId: '100000000000000001',
    selfRoleId: '700000000000000001',
    mentions: [
      { id: '400000000000000002', username: 'bob' },
      { id: '400000000000000004', username: 'ann_1', global_name: 'Ann' },
      { id: '400000000000000005', username: 'carl_1', global_name: 'Carl', member: { nick: 'Carl (ops)' } },
    ],
  };
  it.each([
    ['<@100000000000000001> hello', 'hello'],
    ['<@!100000000000000001> hello', 'hello'],
    ['<@&700000000000000001> hello', 'hello'],
    ['ask <@400000000000000002> and <@!400000000000000002>', 'ask @bob and @bob'],
    // As the server shows them: nickname, else display name, else handle.
    ['ask <@400000000000000004> and <@400000000000000005>', 'ask @Ann and @Carl (ops)'],
    // Not in the message's mentions: left as it is.
    ['ask <@400000000000000009>', 'ask <@400000000000000009>'],
    ['for <@&700000000000000002> in <#300000000000000003>', 'for <@&700000000000000002> in <#300000000000000003>'],
    ['hi <:wave:900000000000000001> <a:party:900000000000000002>', 'hi :wave: :party:'],
    ['by <t:1700000000:R> or <t:0>', 'by 2023-11-14T22:13:20.000Z or 1970-01-01T00:00:00.000Z'],
    ['`a < b && c > d`', '`a < b && c > d`'],
  ])('%j', (raw, plain) => {
    expect(discordPlainText(raw, o)).toBe(plain);
  });
});

describe('what a reply quotes', () => {
  it('Discord: the text as a person reads it, its files and embeds named; nothing for a deleted or empty message', () => {
    const author = { id: '430000000000000043', username: 'bob' };
    expect(
      discordQuote(
        {
          content: '<@1> see <@2>',
          author,
          mentions: [{ id: '2', username: 'ann' }],
          attachments: [{ filename: 'log.txt' }],
          embeds: [{ title: 'CI', description: 'failed' }, {}],
          timestamp: '2026-11-26T10:00:00.000Z',
        },
        '1',
      ),
    ).toEqual({
      userId: author.id,
      userName: 'bob',
      text: 'see @ann\n[file: log.txt]\n[embed: CI: failed]',
      at: '2026-11-26T10:00:00.000Z',
    });
    expect(discordQuote({ content: 'mine', author: { id: '1', username: 'keel' } }, '1')).toMatchObject({ fromBot: true });
    expect(discordQuote(null, '1')).toBeUndefined();
    expect(discordQuote({ content: '', author }, '1')).toBeUndefined();
  });

  it('Slack: the text as typed, files named, the time from its ts; the bot known by its user id', () => {
    expect(slackQuote({ ts: '1700000000.000100', user: 'U0ANN', text: 'a &lt; b', files: [{ name: 'x.pdf' }] }, 'U0BOT')).toEqual({
      userId: 'U0ANN',
      text: 'a < b\n[file: x.pdf]',
      at: '2023-11-14T22:13:20.000Z',
    });
    expect(slackQuote({ ts: '1.0', user: 'U0BOT', text: 'mine' }, 'U0BOT')).toMatchObject({ fromBot: true });
    expect(slackQuote({ ts: '1.0', user: 'U0ANN', text: '' }, 'U0BOT')).toBeUndefined();
  });

  it("Telegram: the selected part of a quote, else text or caption with files; never a forum topic's start", () => {
    const base = { message_id: 9, chat: { id: -1, type: 'supergroup' }, from: { id: 42, first_name: 'Ann' }, text: 'why?' };
    const bob = { id: 43, first_name: 'Bob', username: 'bob' };
    expect(
      telegramQuote({ ...base, reply_to_message: { message_id: 5, from: bob, caption: 'rack', document: { file_name: 'a.pdf' } } }, 1),
    ).toEqual({
      userId: '43',
      userName: 'bob',
      text: 'rack\n[file: a.pdf]',
    });
    expect(
      telegramQuote({ ...base, reply_to_message: { message_id: 5, from: bob, text: 'long. short' }, quote: { text: 'short' } }, 1)?.text,
    ).toBe('short');
    expect(
      telegramQuote({ ...base, message_thread_id: 5, reply_to_message: { message_id: 5, from: bob, text: 'topic' } }, 1),
    ).toBeUndefined();
    expect(telegramQuote({ ...base, reply_to_message: { message_id: 6, from: bob, forum_topic_created: {} } }, 1)).toBeUndefined();
    expect(telegramQuote(base, 1)).toBeUndefined();
    // A reply to a message of another chat: only the part the person quoted, by its origin.
    const origin = { type: 'channel', date: 1_700_000_000, chat: { id: -1009, title: 'Release news' } };
    expect(telegramQuote({ ...base, external_reply: { origin }, quote: { text: 'v2 is out' } }, 1)).toEqual({
      userId: '',
      userName: 'Release news',
      text: 'v2 is out',
      at: '2023-11-14T22:13:20.000Z',
    });
    expect(telegramQuote({ ...base, external_reply: { origin } }, 1)).toBeUndefined();
  });
});
