/**
 * Two readers of command text, neither of which ever runs a shell:
 *
 * - `toArgv(text)`: a `run_command` string turned into an argv the way a POSIX shell would split it (single and
 *   double quotes, backslash escapes), refusing everything that would need a shell to mean anything (pipes,
 *   `;`, `&&`, `||`, `&`, redirections, backticks, `$(`).
 * - `parseShellScript(text)`: the code given to `bash -c` / `sh -c` (or `watch`, `su -c`, `git rebase --exec` ...),
 *   read as a shell would, so that every simple command in it can be checked. Words whose value only a running
 *   shell would know (`$X`, `${X}`, `$(...)`, backticks, globs) are marked dynamic; command substitutions are
 *   returned separately so they can be checked too.
 */

export class Refusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Refusal';
  }
}

export interface Word {
  value: string;
  /** The value depends on the shell: a variable, a substitution, a glob or brace expansion. */
  dynamic: boolean;
}

/** Split a command line into an argv without a shell. Throws Refusal when the text needs a shell. */
export function toArgv(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  const needsShell = (what: string): never => {
    throw new Refusal(
      `the command uses ${what}, which needs a shell; Keel never runs commands through a shell. ` +
        'Run one program at a time (pass its arguments in `args`), or ask for each step separately.',
    );
  };
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
      i++;
      continue;
    }
    if (c === '\n' || c === '\r') needsShell('a line break (several commands)');
    if (c === '\\') {
      if (i + 1 >= text.length) throw new Refusal('the command ends with a lone backslash');
      cur += text[i + 1];
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Refusal('the command has an unterminated single quote');
      cur += text.slice(i + 1, end);
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i++;
      inWord = true;
      for (;;) {
        if (i >= text.length) throw new Refusal('the command has an unterminated double quote');
        const d = text[i] as string;
        if (d === '"') break;
        if (d === '`') needsShell('a backtick command substitution');
        if (d === '$' && text[i + 1] === '(') needsShell('a $( ) command substitution');
        if (d === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1] as string)) {
          cur += text[i + 1];
          i += 2;
          continue;
        }
        cur += d;
        i++;
      }
      i++;
      continue;
    }
    if (c === '|') needsShell(text[i + 1] === '|' ? '`||`' : 'a pipe `|`');
    if (c === ';') needsShell('`;` (several commands)');
    if (c === '&') needsShell(text[i + 1] === '&' ? '`&&`' : '`&` (background)');
    if (c === '>' || c === '<') needsShell(`a redirection \`${c}\``);
    if (c === '`') needsShell('a backtick command substitution');
    if (c === '$' && text[i + 1] === '(') needsShell('a $( ) command substitution');
    cur += c;
    inWord = true;
    i++;
  }
  if (inWord) out.push(cur);
  return out;
}

export interface ShellScript {
  /** Each simple command as its words (assignments and redirections removed). */
  commands: Word[][];
  /** Code of `$(...)`, backticks and `<(...)` / `>(...)`, to be checked as scripts of their own. */
  substitutions: string[];
  /** Names assigned in front of a command or alone (`X=1 cmd`, `export`-less). */
  assignments: string[];
}

const OPERATORS = ['&&', '||', ';;', '|&', '>>', '<<', '&>', '>&', '<>', '>|', '|', '&', ';', '(', ')', '>', '<', '\n'];
const REDIRECTS = new Set(['>', '>>', '<', '&>', '>&', '<>', '>|']);
/** Reserved words that may open a command position; the next word is the command. */
const PREFIX_WORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', '!', '{', '}', 'time', '[[', ']]']);

type Tok = { kind: 'word'; word: Word } | { kind: 'op'; op: string };

/** Read shell code (as given to `sh -c`). Throws Refusal for constructs it does not analyse. */
export function parseShellScript(text: string, depth = 0): ShellScript {
  if (depth > 8) throw new Refusal('the command nests shells too deeply to be checked, so it cannot be proven safe');
  const substitutions: string[] = [];
  const toks: Tok[] = [];
  let i = 0;
  let cur = '';
  let inWord = false;
  let dynamic = false;
  const flush = () => {
    if (inWord) toks.push({ kind: 'word', word: { value: cur, dynamic } });
    cur = '';
    inWord = false;
    dynamic = false;
  };
  /** Index just after the `)` closing the `(` at `open`, honouring quotes. */
  const closeParen = (open: number): number => {
    let level = 0;
    for (let j = open; j < text.length; j++) {
      const ch = text[j];
      if (ch === '\\') {
        j++;
        continue;
      }
      if (ch === "'") {
        const e = text.indexOf("'", j + 1);
        if (e < 0) break;
        j = e;
        continue;
      }
      if (ch === '(') level++;
      if (ch === ')' && --level === 0) return j + 1;
    }
    throw new Refusal('the shell code has an unbalanced "(", so it cannot be proven safe');
  };
  const dollar = (): void => {
    // at text[i] === '$'
    const n = text[i + 1];
    if (n === '(') {
      if (text[i + 2] === '(')
        throw new Refusal('the shell code uses arithmetic expansion $(( )), which is not analysed, so it cannot be proven safe');
      const end = closeParen(i + 1);
      substitutions.push(text.slice(i + 2, end - 1));
      i = end;
    } else if (n === '{') {
      const end = text.indexOf('}', i);
      if (end < 0) throw new Refusal('the shell code has an unterminated ${');
      i = end + 1;
    } else if (n !== undefined && /[A-Za-z0-9_@*#?$!-]/.test(n)) {
      i += 2;
      while (i < text.length && /[A-Za-z0-9_]/.test(text[i] as string) && /[A-Za-z_]/.test(n)) i++;
    } else if (n === "'" || n === '"') {
      throw new Refusal('the shell code uses $\'...\' or $"..." quoting, which is not analysed, so it cannot be proven safe');
    } else {
      cur += '$';
      inWord = true;
      i++;
      return;
    }
    dynamic = true;
    inWord = true;
  };
  const backtick = (): void => {
    const end = text.indexOf('`', i + 1);
    if (end < 0) throw new Refusal('the shell code has an unterminated backtick');
    substitutions.push(text.slice(i + 1, end));
    i = end + 1;
    dynamic = true;
    inWord = true;
  };
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t') {
      flush();
      i++;
      continue;
    }
    if (c === '#' && !inWord) {
      const e = text.indexOf('\n', i);
      i = e < 0 ? text.length : e;
      continue;
    }
    if (c === '\\') {
      if (text[i + 1] === '\n') {
        i += 2;
        continue;
      }
      cur += text[i + 1] ?? '';
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const e = text.indexOf("'", i + 1);
      if (e < 0) throw new Refusal('the shell code has an unterminated single quote');
      cur += text.slice(i + 1, e);
      inWord = true;
      i = e + 1;
      continue;
    }
    if (c === '"') {
      i++;
      inWord = true;
      for (;;) {
        if (i >= text.length) throw new Refusal('the shell code has an unterminated double quote');
        const d = text[i] as string;
        if (d === '"') break;
        if (d === '$') {
          dollar();
          continue;
        }
        if (d === '`') {
          backtick();
          continue;
        }
        if (d === '\\' && i + 1 < text.length && '"\\$`\n'.includes(text[i + 1] as string)) {
          cur += text[i + 1];
          i += 2;
          continue;
        }
        cur += d;
        i++;
      }
      i++;
      continue;
    }
    if (c === '$') {
      dollar();
      continue;
    }
    if (c === '`') {
      backtick();
      continue;
    }
    if ((c === '<' || c === '>') && text[i + 1] === '(') {
      const end = closeParen(i + 1);
      substitutions.push(text.slice(i + 2, end - 1));
      i = end;
      dynamic = true;
      inWord = true;
      continue;
    }
    if (c === '<' && text[i + 1] === '<') {
      throw new Refusal('the shell code uses a here-document or here-string (<<), which is not analysed, so it cannot be proven safe');
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (op) {
      // "2>" and "2>&1": a file descriptor number glued to a redirection belongs to it.
      if (REDIRECTS.has(op) && inWord && /^\d+$/.test(cur) && !dynamic) {
        cur = '';
        inWord = false;
      }
      flush();
      toks.push({ kind: 'op', op });
      i += op.length;
      continue;
    }
    if ('*?['.includes(c)) dynamic = true;
    if (c === '{') {
      const close = text.indexOf('}', i);
      if (close > i && /[,.]/.test(text.slice(i, close))) dynamic = true;
    }
    if (c === '~' && !inWord) dynamic = true;
    cur += c;
    inWord = true;
    i++;
  }
  flush();

  const commands: Word[][] = [];
  const assignments: string[] = [];
  let words: Word[] = [];
  let skipNext = false;
  let atStart = true;
  let inFor = false;
  const end = () => {
    if (words.length) commands.push(words);
    words = [];
    atStart = true;
    inFor = false;
  };
  for (const t of toks) {
    if (t.kind === 'op') {
      if (REDIRECTS.has(t.op)) {
        skipNext = true;
        continue;
      }
      end();
      continue;
    }
    if (skipNext) {
      skipNext = false;
      continue;
    }
    const w = t.word;
    if (inFor) continue;
    if (atStart && !w.dynamic && PREFIX_WORDS.has(w.value)) continue;
    if (atStart && !w.dynamic && (w.value === 'for' || w.value === 'select')) {
      inFor = true;
      continue;
    }
    if (atStart && !w.dynamic && ['case', 'esac', 'function', 'coproc'].includes(w.value)) {
      throw new Refusal(`the shell code uses \`${w.value}\`, which is not analysed, so it cannot be proven safe`);
    }
    if (atStart && /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(w.value)) {
      assignments.push(w.value.slice(0, w.value.search(/[[+=]/)));
      continue;
    }
    atStart = false;
    words.push(w);
  }
  end();
  for (const cmd of commands) {
    // `name() { ...; }` function definitions can shadow any program name.
    if (cmd.some((w) => /\(\)$/.test(w.value)))
      throw new Refusal('the shell code defines a function, which is not analysed, so it cannot be proven safe');
  }
  return { commands, substitutions, assignments };
}
