/**
 * What the agent reads of a Slack or Discord message: Slack's escaping (`&amp;`, `&lt;`, `&gt;`, also in code) and
 * control sequences (`<@U…>`, `<#C…|name>`, `<!here>`, `<url|label>`, `<!date^…|fallback>`) and Discord's mentions,
 * custom emoji and timestamps become what the person wrote or saw; the bot's own mention is dropped; the rest stays.
 */
import { describe, expect, it } from 'vitest';
import { discordPlainText } from '../../plugins/chatC/src/inbound.js';
import { slackPlainText } from '../../plugins/chatD/src/inbound.js';

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
  const o = { botId: '100000000000000001', selfRoleId: '700000000000000001', mentions: [{ id: '400000000000000002', username: 'bob' }] };
  it.each([
    ['<@100000000000000001> hello', 'hello'],
    ['<@!100000000000000001> hello', 'hello'],
    ['<@&700000000000000001> hello', 'hello'],
    ['ask <@400000000000000002> and <@!400000000000000002>', 'ask @bob and @bob'],
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
