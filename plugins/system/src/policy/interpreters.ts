/**
 * Interpreters with inline code (`node -e`, `python -c`, `perl -e`, `ruby -e`, `pwsh -c`, awk programs): every word
 * of the code is a candidate program, deleting library calls count as `rm`, spawning calls must name their
 * programs in string literals (which are then checked as shell code), and code that builds what it runs, or
 * reaches a function by a name not written in it, is refused (inline-code.ts).
 * A script file given to an interpreter is not read.
 */
import { Refusal } from '../tokenize.js';
import { checkInlineCode } from './inline-code.js';
import { plain, type ProgramRule, programName, skipOptions, type Walk } from './walk.js';

export const INTERPRETER =
  /^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl[0-9.]*|ruby[0-9.]*|php[0-9.]*|lua[0-9.]*|pwsh|powershell|osascript|tclsh|wish|Rscript|awk|gawk|mawk|nawk)$/i;

/** String literals in inline code that are module names or options, not commands. */
const NOT_COMMANDS =
  /^(node:)?(child_process|subprocess|os|sys|shutil|fs|path|util|open3|utf-?8|ascii|latin1|inherit|pipe|ignore|shell|r|w|a|rb|wb)$/i;

/** Inline code that builds what it runs at run time: nothing about it can be proven. */
const DYNAMIC_CODE =
  /\beval\b|\bexec\s*\(\s*[^'"\s)]|new\s+Function|\bFunction\s*\(|fromCharCode|\batob\b|b64decode|base64|Buffer\.from|\bdecode\s*\(|\$\{|\bcompile\s*\(|__import__\s*\(\s*[^'"\s]|importlib|\bgetattr\s*\(|\brequire\s*\(\s*[^'"`\s]|\bimport\s*\(\s*[^'"`\s]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[0-7]{3}|\bchr\s*\(|\bpack\s*\(|\bsend\s*\(|\bconstantize\b|\bInvoke-Expression\b|\biex\b|\bFromBase64String\b|-EncodedCommand|\bString\.raw\b|\bReflect\b|globalThis\s*\[|process\s*\[|\bprocess\.binding\b|['"`]\s*\+\s*['"`]|\.join\s*\(|\.reverse\s*\(/i;

/** Inline code that starts programs. */
const SPAWNS =
  /child_process|\bspawn|\bexec[a-zA-Z]*\s*\(|\bfork\s*\(|\bexecFile|os\.system|os\.popen|os\.exec|os\.spawn|\bsubprocess\b|\bpopen\b|\bsystem\s*\(|\bsystem\s+['"]|\bexec\s+['"]|%x|IO\.popen|Open3|Process\.spawn|Kernel\.|\bStart-Process\b|\bpty\b|\bBun\.spawn|Deno\.(run|Command)|`|\bqx\b|\bpcntl_exec|\bshell_exec|\bpassthru\b|\bproc_open\b/;

/** Library calls that delete files, which count as running `rm` (as `find -delete` does). */
const DELETES =
  /\b(rmSync|rmdirSync|unlinkSync|rm|rmdir|unlink|unlinkat|rmtree|remove|removedirs|Remove-Item|ri|rd|del|erase|delete_file|FileUtils|File\.delete|Dir\.delete|unlink_all|remove_tree|shred|removeSync|emptyDir|emptyDirSync|emptydirSync|rimraf|rimrafSync|rm_rf|rm_r|rm_f|remove_dir|remove_entry|remove_entry_secure|delete_tree)\b|::[Dd]elete\b/;

function inlineCode(name: string, args: string[]): string[] | undefined {
  const out: string[] = [];
  const flags = /^(node|nodejs|bun)$/.test(name)
    ? ['-e', '--eval', '-p', '--print', '-pe', '-ep']
    : /^deno$/.test(name)
      ? ['eval']
      : /^(python|pypy)/.test(name)
        ? ['-c']
        : /^(perl|ruby)/.test(name)
          ? ['-e', '-E']
          : /^php/.test(name)
            ? ['-r', '-B', '-R', '-E']
            : /^lua/.test(name)
              ? ['-e']
              : /^(pwsh|powershell)$/.test(name)
                ? ['-c', '-command', '-com', '-comm', '-comma', '-comman', '-cmd']
                : /^osascript$/.test(name)
                  ? ['-e']
                  : /^(awk|gawk|mawk|nawk)$/.test(name)
                    ? []
                    : ['-e', '-c'];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const lower = a.toLowerCase();
    if (/^(pwsh|powershell)$/.test(name) && /^-(e|ec|en|enc|encodedcommand|encodedc)/.test(lower) && !lower.startsWith('-ex')) {
      throw new Refusal(`"${name} ${a}" runs base64-encoded code, which cannot be proven safe`);
    }
    if (/^(pwsh|powershell)$/.test(name) && (lower === '-f' || lower === '-file')) return out.length ? out : undefined;
    const eq = a.indexOf('=');
    if (eq > 0 && flags.includes(a.slice(0, eq))) {
      out.push(a.slice(eq + 1));
      continue;
    }
    if (
      flags.includes(lower) ||
      (/^-[a-zA-Z]+$/.test(a) && flags.some((f) => f.length === 2 && a.endsWith(f[1] as string) && /^(python|pypy|perl|ruby)/.test(name)))
    ) {
      out.push(args[i + 1] ?? '');
      i++;
      if (/^(pwsh|powershell)$/.test(name)) {
        out[out.length - 1] = args.slice(i).join(' ');
        break;
      }
    }
  }
  if (/^(awk|gawk|mawk|nawk)$/.test(name)) {
    const at = skipOptions(args, ['-f', '-v', '-F', '--file', '--assign', '--field-separator']);
    if (args.slice(0, at).some((a) => a === '-f' || a === '--file')) return undefined;
    if (args[at] !== undefined) out.push(args[at] as string);
  }
  return out.length ? out : undefined;
}

/** String literals of code ('...', "...", `...` without substitutions). */
function literals(code: string): string[] {
  const out: string[] = [];
  const re = /'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|`([^`]*)`/g;
  for (const m of code.matchAll(re)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

export const interpreterRule: ProgramRule = (name, rest, v) => {
  const walk = v.walk;
  if (rest.some((w) => w.dynamic)) {
    throw new Refusal(`the arguments of "${name}" are only known when a shell expands them, so the command cannot be proven safe`);
  }
  const args = plain(rest);
  const codes = inlineCode(name, args);
  if (!codes) return; // a script file or a REPL with no input: not inspected (documented)
  for (const code of codes) {
    if (DYNAMIC_CODE.test(code)) {
      throw new Refusal(`the inline ${name} code builds or decodes what it runs at run time, so it cannot be proven safe`);
    }
    // awk's arrays and string joins reach nothing (its only ways out, system() and pipes, are refused below);
    // PowerShell has its own reading.
    if (!/^(awk|gawk|mawk|nawk|pwsh|powershell)$/.test(name)) checkInlineCode(name, code);
    // Every word of the code is a candidate program: a denied name anywhere in it is refused.
    for (const word of code.split(/[^A-Za-z0-9_.+-]+/)) if (word) walk.builtins.add(programName(word));
    if (DELETES.test(code)) walk.builtins.add('rm');
    if (/^(awk|gawk|mawk|nawk)$/.test(name) && /\bsystem\s*\(|\|\s*getline|print[^;]*\|/.test(code)) {
      throw new Refusal(`the ${name} program runs shell commands, which cannot be proven safe`);
    }
    if (/^(pwsh|powershell)$/.test(name)) {
      visitPowerShell(code, walk);
      continue;
    }
    if (SPAWNS.test(code)) {
      const lits = literals(code).filter((l) => l.trim() !== '' && !NOT_COMMANDS.test(l.trim()));
      const perlTicks = /^(perl|ruby)/.test(name)
        ? [...code.matchAll(/`([^`]*)`|qx\s*[{(/]([^})/]*)[})/]|%x[{(]([^})]*)[})]/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '')
        : [];
      if (lits.length === 0 && perlTicks.length === 0) {
        throw new Refusal(`the inline ${name} code starts programs whose names are not written in it, so it cannot be proven safe`);
      }
      // The strings a spawning call receives may be shell code (exec, system, shell=True): check them as such.
      for (const l of [...lits, ...perlTicks]) {
        try {
          v.script(l, v.depth + 1);
        } catch (e) {
          if (e instanceof Refusal) throw new Refusal(`the inline ${name} code starts programs: ${e.message}`);
          throw e;
        }
      }
    }
  }
};

const PS_DELETE = /^(remove-item|ri|rm|rmdir|rd|del|erase|clear-content|clc|format-volume|stop-computer|restart-computer)$/i;

function visitPowerShell(code: string, walk: Walk): void {
  if (/&\s*[$(]|\.\s*[$(]|\bStart-Process\b|\bsaps\b|\bInvoke-Command\b|\bicm\b|\[scriptblock\]|\bInvoke-Item\b|\bii\b/i.test(code)) {
    throw new Refusal('the PowerShell code starts programs or script blocks it builds at run time, so it cannot be proven safe');
  }
  for (const stmt of code.split(/[;|&\n{}()]+/)) {
    const first = stmt.trim().split(/\s+/)[0];
    if (!first) continue;
    if (first.startsWith('$')) continue; // an assignment or expression
    if (PS_DELETE.test(first)) {
      walk.builtins.add('rm');
      walk.builtins.add(programName(first));
      continue;
    }
    walk.builtins.add(programName(first.replace(/^['"]|['"]$/g, '')));
  }
}
