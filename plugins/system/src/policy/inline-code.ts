/**
 * What inline interpreter code (`python3 -c`, `node -e`, `perl -e` ...) may not do, because then no reading of it
 * can say what it calls or starts:
 *
 * 1. build a string at run time (concatenation of any kind, formatting, interpolation, slicing a literal, char
 *    codes, decoding): the name of a program or a function could be in it;
 * 2. reach a function or a property by a name that is not written in the code: a subscript whose key is not a
 *    literal (`os.__dict__[k]`, `fs[k]`, `fs?.[k]`), `getattr`/`vars`/`globals`/`__dict__`, `Reflect`,
 *    `Object.values(fs)`, Ruby's `send`, Perl's symbolic references, the code-loading modules (`vm`, `ctypes`,
 *    `pickle` ...). A deleting call reached that way (`os.unlink`, `fs.unlinkSync`) starts no program, so neither
 *    the deny list of program names nor the jail would see it.
 *
 * Code that does neither has to name every function it calls, and the words of the code are checked against the
 * deny list (and deleting calls count as `rm`, interpreters.ts). Over-cautious on purpose: `print(a[i])` and
 * `'{}'.format(x)` are refused too, with the reason.
 */
import { Refusal } from '../tokenize.js';

type Family = 'py' | 'js' | 'perl' | 'ruby' | 'php' | 'lua' | 'other';

export function familyOf(name: string): Family {
  if (/^(python|pypy)/.test(name)) return 'py';
  if (/^(node|nodejs|deno|bun)$/.test(name)) return 'js';
  if (/^perl/.test(name)) return 'perl';
  if (/^ruby/.test(name)) return 'ruby';
  if (/^php/.test(name)) return 'php';
  if (/^lua/.test(name)) return 'lua';
  return 'other';
}

interface Literal {
  /** Index of the first character (its prefix, for Python's f'', r'', b''). */
  start: number;
  /** Index after the closing quote. */
  end: number;
  prefix: string;
  quote: string;
  body: string;
  closed: boolean;
}

/** The string literals of the code, in order ('...', "...", `...`, Python's prefixes and triple quotes). */
function literalsOf(code: string, family: Family): Literal[] {
  const out: Literal[] = [];
  let i = 0;
  while (i < code.length) {
    const c = code[i] as string;
    if (c !== "'" && c !== '"' && c !== '`') {
      i++;
      continue;
    }
    let p = i;
    if (family === 'py') while (p > 0 && i - p < 3 && /[rRbBuUfF]/.test(code[p - 1] as string)) p--;
    if (p > 0 && /\w/.test(code[p - 1] as string)) p = i; // part of a name, not a prefix
    const q = family === 'py' && code.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
    let j = i + q.length;
    let body = '';
    while (j < code.length && !code.startsWith(q, j)) {
      if (code[j] === '\\') {
        body += code.slice(j, j + 2);
        j += 2;
      } else {
        body += code[j];
        j++;
      }
    }
    const closed = j < code.length;
    out.push({ start: p, end: closed ? j + q.length : code.length, prefix: code.slice(p, i), quote: c, body, closed });
    i = closed ? j + q.length : code.length;
  }
  return out;
}

/** Interpolation inside a literal: Python f-strings, JS template `${}`, Ruby `#{}`. */
function interpolates(l: Literal, family: Family): boolean {
  if (family === 'py') return /f/i.test(l.prefix) && /\{(?!\{)/.test(l.body.replace(/\{\{/g, ''));
  if (l.quote === '`' && /\$\{/.test(l.body)) return true;
  if (l.quote === "'") return false;
  // Perl's and PHP's "$name" are left alone: what they build can only reach a sink that is refused by itself
  // (`&$f`, `&{"..."}`, `->$m`, `$f(...)`, eval) or a program start, which is checked as shell code.
  return family === 'ruby' && /#\{|#[@$]/.test(l.body);
}

/** A subscript key that names itself: a number, a numeric slice, or a plain literal string. */
function literalKey(key: string): boolean {
  const t = key.trim();
  if (/^-?\d+$/.test(t) || /^-?\d*\s*:\s*-?\d*(\s*:\s*-?\d*)?$/.test(t)) return true;
  return /^'(?:[^'\\]|\\.)*'$|^"(?:[^"\\]|\\.)*"$|^`[^`$\\]*`$/.test(t);
}

/** The text between `[` at `open` and its matching `]` (literals skipped), or undefined when it never closes. */
function bracketContent(code: string, open: number, lits: Literal[]): { key: string; close: number } | undefined {
  let depth = 0;
  for (let j = open; j < code.length; j++) {
    const lit = lits.find((l) => l.start <= j && j < l.end);
    if (lit) {
      j = lit.end - 1;
      continue;
    }
    if (code[j] === '[') depth++;
    else if (code[j] === ']' && --depth === 0) return { key: code.slice(open + 1, j), close: j };
  }
  return undefined;
}

/** Calls that build or decode a string (beyond the literal-adjacent operators found by position). */
const BUILDS =
  /\.(format|format_map|concat|join|replace|replaceAll|translate|maketrans|swapcase|repeat|padStart|padEnd|reverse|to_bytes|fromhex|pack|unpack)\s*\(|\bformat\s*\(|\breversed\s*\(|\bsprintf\b|\bString\.format\b|\bfromCharCode\b|\bfromCodePoint\b|\bchr\s*\(|\bord\s*\(|\bbytes\s*\(|\bbytearray\s*\(|\bTemplate\s*\(|\bcodecs\b|\bbinascii\b|\bunhexlify\b|\bdecompress\b|\brot13\b|\batob\b|\bbtoa\b|b64decode|base64|Buffer\.from|\bdecode\s*\(|\bTextDecoder\b|\bString\.raw\b|\bunescape\s*\(|\bdecodeURI(Component)?\b/;

/** Ways to reach a function or a property by a name that is not written in the code, per language. */
const REACHES: Record<Family, RegExp | undefined> = {
  py: /__dict__|\bvars\s*\(|\bglobals\s*\(|\blocals\s*\(|__getattribute__|__getattr__|__builtins__|\bbuiltins\b|\bgetattr\s*\(|\battrgetter\b|\bmethodcaller\b|\binspect\b|\bsys\.modules\b|\bimportlib\b|\bctypes\b|\bcffi\b|\bc?[pP]ickle\b|\bmarshal\b|\bdill\b|\bshelve\b|\brunpy\b|\bcode\.(interact|InteractiveConsole|InteractiveInterpreter)\b|\boperator\b|__class__|__subclasses__|__globals__|__reduce/,
  js: /\bReflect\b|\bObject\s*\.\s*(values|entries|getOwnPropertyNames|getOwnPropertyDescriptors?|getOwnPropertySymbols|fromEntries|assign|getPrototypeOf)\b|__proto__|__lookup[GS]etter__|__define[GS]etter__|\bvm\b|\brunIn\w*Context\b|\bcompileFunction\b|\bWorker\b|\binspector\b|['"`](node:)?module['"`]|\bModule\s*\.\s*_|\b_compile\b|\b_load\b|\bprocess\s*\.\s*dlopen\b|\bmainModule\b|['"`]\s*data:|\bWebAssembly\b|\bwith\s*\(|\bProxy\b|\bglobalThis\b|\bprocess\s*\[|\brequire\s*\.\s*cache\b/,
  perl: /&\s*\{|&\s*\$|->\s*\$|\bcan\s*\(|->\s*can\b|\*\s*\{|\$\s*\{\s*['"$]|%\s*\w*::|\bSymbol\b|\bgoto\s*&|\bdo\s+['"$]|\brequire\s+\$|\bno\s+strict\b|\bs([^\w\s{])(?:(?!\1).)*\1(?:(?!\1).)*\1[a-z]*e|\bs\{[^}]*\}\s*\{[^}]*\}[a-z]*e/,
  ruby: /\b(public_send|__send__|send|method|instance_method|define_method|const_get|instance_variable_get|binding|ObjectSpace|to_sym|intern|respond_to\?)\b|\w_eval\b/,
  php: /\$\w+\s*\(|\$\s*\{|\bcall_user_func|\bcreate_function\b|\bReflection\w*|\bget_defined_functions\b/,
  lua: /\b_G\b|\b_ENV\b|\bload\s*\(|\bloadstring\b|\bdofile\b|\bloadfile\b|\brawget\b|\bdebug\s*\.|\bpackage\s*\.\s*loaded\b|\bsetmetatable\b|\bgetmetatable\b/,
  // Rscript, tclsh/wish, osascript: what each offers to call a function by a computed name or run a string.
  other:
    /\bdo\.call\b|\bmatch\.fun\b|\bget\s*\(|\bparse\s*\(|\bpaste0?\s*\(|\buplevel\b|\binterp\b|\bsubst\b|(^|[;[{]\s*)\$\w|\brun\s+script\b|\bdo\s+shell\s+script\b/,
};

function refuseBuilding(name: string, what: string): never {
  throw new Refusal(`the inline ${name} code builds or decodes what it runs at run time (${what}), so it cannot be proven safe`);
}

function refuseReaching(name: string, what: string): never {
  throw new Refusal(
    `the inline ${name} code reaches a function or property by a name that is not written in it (${what}): it could be a deleting call such as unlink, or start a program, so it cannot be proven safe`,
  );
}

/** The first few characters of a piece of code, for a reason. */
function shown(s: string): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > 40 ? `${one.slice(0, 40)}…` : one;
}

/** Throws a Refusal when the code builds strings or reaches names at run time (see the top of this file). */
export function checkInlineCode(name: string, code: string): void {
  const family = familyOf(name);
  const lits = literalsOf(code, family);
  if (lits.some((l) => !l.closed)) refuseBuilding(name, 'a string literal that does not end');
  const nextChar = (at: number) => code.slice(at).match(/^\s*(\S)/)?.[1] ?? '';
  const prevChar = (at: number) => code.slice(0, at).match(/(\S)\s*$/)?.[1] ?? '';
  for (const [k, l] of lits.entries()) {
    const text = code.slice(l.start, l.end);
    if (interpolates(l, family)) refuseBuilding(name, `interpolation in ${shown(text)}`);
    const after = nextChar(l.end);
    const next = lits[k + 1];
    if (next && code.slice(l.end, next.start).trim() === '')
      refuseBuilding(name, `adjacent strings ${shown(code.slice(l.start, next.end))}`);
    if (/[+%*.[<]/.test(after) || (family === 'other' && after === '&')) refuseBuilding(name, `"${after}" after the string ${shown(text)}`);
    const before = prevChar(l.start);
    if (/[+*.]/.test(before)) refuseBuilding(name, `"${before}" before the string ${shown(text)}`);
  }
  const m = BUILDS.exec(code);
  if (m) refuseBuilding(name, m[0].replace(/\s*\($/, '').trim());
  const r = REACHES[family]?.exec(code);
  if (r) refuseReaching(name, r[0].replace(/\s*\($/, '').trim());
  // Subscripts (code outside literals): `x[k]`, `f()[k]`, `a[0][k]`, `x?.[k]`, and JS computed keys `{[k]: f}`.
  for (let i = 0; i < code.length; i++) {
    const lit = lits.find((l) => l.start <= i && i < l.end);
    if (lit) {
      i = lit.end - 1;
      continue;
    }
    if (code[i] !== '[') continue;
    const before = prevChar(i);
    const computedKey = /[{,]/.test(before) && family === 'js';
    if (!/[\w)\].$}]/.test(before) && !computedKey) continue;
    const content = bracketContent(code, i, lits);
    if (!content) refuseReaching(name, `a "[" that does not close`);
    if (computedKey && !/^\s*[:(]/.test(code.slice(content.close + 1))) continue; // an array literal
    if (!literalKey(content.key)) refuseReaching(name, `[${shown(content.key)}]`);
  }
  // The same over the raw text, so a quote the scanner misread (a regular expression, a comment) hides nothing.
  for (const s of code.matchAll(/[\w)\]]\s*\??\.?\[([^[\]]*)\]/g)) {
    if (!literalKey(s[1] ?? '')) refuseReaching(name, `[${shown(s[1] ?? '')}]`);
  }
}
