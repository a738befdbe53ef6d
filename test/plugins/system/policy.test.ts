/**
 * The command policy as a pure function: a table of bypass attempts against the default lists of SPEC.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMMAND_ALLOW_LIST, DEFAULT_COMMAND_DENY_LIST } from '../../../kernel/config/kernel-keys.js';
import { analyze } from '../../../plugins/system/src/command-policy.js';
import { toArgv } from '../../../plugins/system/src/tokenize.js';

const lists = { allow: [...DEFAULT_COMMAND_ALLOW_LIST, 'env', 'nice', 'nohup', 'timeout', 'xargs', 'sudo', 'python3', 'perl', 'ruby', 'watch', 'stdbuf', 'sh'], deny: [...DEFAULT_COMMAND_DENY_LIST], sudo: false };

/** [description, argv, allowed, reason fragment] */
const CASES: Array<[string, string[], boolean, string?]> = [
  // allowed
  ['plain echo', ['echo', 'hello'], true],
  ['ls with options', ['ls', '-la', '/tmp'], true],
  ['git status', ['git', 'status'], true],
  ['bash -c with allowed programs', ['bash', '-c', 'echo a && ls -l | grep x; cd /tmp'], true],
  ['env with a variable', ['env', 'FOO=1', 'echo', 'x'], true],
  ['find -exec with an allowed program', ['find', '.', '-name', '*.ts', '-exec', 'grep', '-l', 'x', '{}', ';'], true],
  ['node -e without processes', ['node', '-e', 'console.log(1+1)'], true],
  ['node -e spawning an allowed program', ['node', '-e', "require('child_process').execSync('ls -l')"], true],
  ['python -c printing', ['python', '-c', 'print(42)'], true],
  ['npx with a package that is not denied', ['npx', 'prettier', '--check', '.'], true],
  ['timeout wrapping echo', ['timeout', '5', 'echo', 'hi'], true],
  ['word rm inside an argument of echo', ['echo', 'rm'], true],
  // refused: paths and names
  ['rm', ['rm', '-rf', '/'], false, '"rm" is on commandDenyList'],
  ['absolute path', ['/bin/rm', '-rf', 'x'], false, '"rm" is on commandDenyList'],
  ['relative path', ['./rm', 'x'], false, '"rm"'],
  ['windows exe name', ['RM.EXE', 'x'], false, '"rm"'],
  ['windows path', ['C:\\Windows\\System32\\del.exe', 'x'], false, '"del"'],
  ['mkfs variant', ['mkfs.ext4', '/dev/sda1'], false, 'mkfs'],
  // wrappers
  ['env', ['env', 'rm', '-rf', 'x'], false, '"rm"'],
  ['env with options and variables', ['env', '-i', '-u', 'HOME', 'A=1', '/bin/rm', 'x'], false, '"rm"'],
  ['env -S split string', ['env', '-S', 'rm -rf x'], false, '"rm"'],
  ['nice -n', ['nice', '-n', '10', 'rm', 'x'], false, '"rm"'],
  ['nohup', ['nohup', 'rm', 'x'], false, '"rm"'],
  ['timeout with options', ['timeout', '-s', 'KILL', '10', 'rm', 'x'], false, '"rm"'],
  ['sudo', ['sudo', '-u', 'root', 'rm', 'x'], false, '"rm"'],
  ['sudo -s without a command', ['sudo', '-s'], false, 'shell'],
  ['xargs', ['xargs', '-n', '1', 'rm'], false, '"rm"'],
  ['stdbuf', ['stdbuf', '-o', 'L', 'dd', 'if=/dev/zero'], false, '"dd"'],
  ['watch runs sh -c', ['watch', '-n', '1', 'rm x'], false, '"rm"'],
  ['nested wrappers', ['nice', 'env', 'A=1', 'timeout', '3', 'nohup', 'shutdown', 'now'], false, '"shutdown"'],
  // find
  ['find -exec rm', ['find', '.', '-exec', 'rm', '{}', ';'], false, '"rm"'],
  ['find -execdir /bin/rm', ['find', '.', '-execdir', '/bin/rm', '{}', '+'], false, '"rm"'],
  ['find -ok rm', ['find', '.', '-ok', 'rm', '{}', ';'], false, '"rm"'],
  ['find -delete', ['find', '.', '-name', '*.tmp', '-delete'], false, '"rm"'],
  // shells
  ['bash -c rm', ['bash', '-c', 'rm -rf x'], false, '"rm"'],
  ['sh -c after ;', ['sh', '-c', 'echo ok; rm x'], false, '"rm"'],
  ['bash -c after &&', ['bash', '-c', 'ls && rm x'], false, '"rm"'],
  ['bash -c in a pipe', ['bash', '-c', 'ls | xargs rm'], false, '"rm"'],
  ['bash -c in $( )', ['bash', '-c', 'echo $(rm x)'], false, '"rm"'],
  ['bash -c in backticks', ['bash', '-c', 'echo `rm x`'], false, '"rm"'],
  ['bash -lc clustered flag', ['bash', '-lc', 'rm x'], false, '"rm"'],
  ['bash -c nested sh -c', ['bash', '-c', 'sh -c "rm x"'], false, '"rm"'],
  ['bash -c quoted program name', ['bash', '-c', "'r''m' x"], false, '"rm"'],
  ['bash -c escaped program name', ['bash', '-c', 'r\\m x'], false, '"rm"'],
  ['bash -c subshell', ['bash', '-c', '(cd /tmp; rm x)'], false, '"rm"'],
  ['bash -c if/then', ['bash', '-c', 'if true; then rm x; fi'], false, '"rm"'],
  ['bash -c variable as program', ['bash', '-c', '$X'], false, 'cannot be proven safe'],
  ['bash -c variable program in a pipe', ['bash', '-c', 'ls | $CMD'], false, 'cannot be proven safe'],
  ['bash -c eval', ['bash', '-c', 'eval "r""m x"'], false, 'cannot be proven safe'],
  ['bash -c glob as program', ['bash', '-c', '/bin/r? x'], false, 'cannot be proven safe'],
  ['bash -c env assignment of LD_PRELOAD', ['bash', '-c', 'LD_PRELOAD=/tmp/x.so ls'], false, 'cannot be proven safe'],
  ['bash -c process substitution', ['bash', '-c', 'cat <(rm x)'], false, '"rm"'],
  ['bash -c here-doc', ['bash', '-c', 'cat <<EOF\nx\nEOF'], false, 'cannot be proven safe'],
  ['bash -c case', ['bash', '-c', 'case x in x) rm y;; esac'], false, 'cannot be proven safe'],
  ['pwsh -c Remove-Item', ['pwsh', '-c', 'Remove-Item -Recurse x'], false, '"rm"'],
  ['pwsh -EncodedCommand', ['pwsh', '-EncodedCommand', 'cgBtACAAeAA='], false, 'cannot be proven safe'],
  ['powershell -Command with del', ['powershell', '-Command', 'Get-Date; del x'], false, '"del"'],
  // interpreters
  ['node -e child_process rm', ['node', '-e', "require('child_process').execSync('rm -rf x')"], false, '"rm"'],
  ['node --eval=', ['node', '--eval=require("child_process").spawnSync("rm",["x"])'], false, '"rm"'],
  ['node -e fs.rmSync', ['node', '-e', "require('fs').rmSync('x',{recursive:true})"], false, '"rm"'],
  ['node -e building the name', ['node', '-e', "require('child_process').execSync('r'+'m x')"], false, 'cannot be proven safe'],
  ['node -e fromCharCode', ['node', '-e', 'require("child_process").execSync(String.fromCharCode(114,109))'], false, 'cannot be proven safe'],
  ['node -e spawning a variable', ['node', '-e', "const c=process.argv[1];require('child_process').execSync(c)"], false, 'cannot be proven safe'],
  ['node -p', ['node', '-p', "require('child_process').execSync('shutdown now')"], false, '"shutdown"'],
  ['python -c os.system', ['python', '-c', "import os; os.system('rm -rf x')"], false, '"rm"'],
  ['python3 -c subprocess', ['python3', '-c', "import subprocess; subprocess.run(['dd','if=/dev/zero'])"], false, '"dd"'],
  ['python -c shutil.rmtree', ['python', '-c', "import shutil; shutil.rmtree('x')"], false, '"rm"'],
  ['python -c exec of a decoded string', ['python', '-c', "exec(__import__('base64').b64decode('cm0='))"], false, 'cannot be proven safe'],
  ['perl -e system', ['perl', '-e', 'system("rm x")'], false, '"rm"'],
  ['perl -e backticks', ['perl', '-e', 'print `reboot`'], false, '"reboot"'],
  ['ruby -e system', ['ruby', '-e', 'system("poweroff")'], false, '"poweroff"'],
  ['npx rimraf', ['npx', 'rimraf', 'x'], false, '"rm"'],
  ['npx -c', ['npx', '-c', 'rm x'], false, '"rm"'],
  ['npm exec', ['npm', 'exec', '--', 'rimraf', 'x'], false, '"rm"'],
  ['npx scoped package with version', ['npx', '@foo/rm@1.0.0', 'x'], false, '"rm"'],
  // git
  ['git -c core.sshCommand', ['git', '-c', 'core.sshCommand=rm -rf x', 'fetch'], false, 'cannot be proven safe'],
  ['git -c alias', ['git', '-c', 'alias.x=!rm -rf y', 'x'], false, 'cannot be proven safe'],
  ['git -c core.pager', ['git', '-c', 'core.pager=sh -c "rm x"', 'log'], false, 'cannot be proven safe'],
  ['git submodule foreach', ['git', 'submodule', 'foreach', 'rm -rf x'], false, '"rm"'],
  ['git rebase --exec', ['git', 'rebase', '--exec', 'rm x', 'HEAD~1'], false, '"rm"'],
  ['git bisect run', ['git', 'bisect', 'run', 'rm', 'x'], false, '"rm"'],
  ['git config core.editor', ['git', 'config', 'core.editor', 'rm'], false, 'cannot be proven safe'],
  ['bash -c hash -p remaps a name', ['bash', '-c', 'hash -p /bin/rm ls; ls x'], false, 'cannot be proven safe'],
  ['bash --norc -c', ['bash', '--norc', '-c', 'rm x'], false, '"rm"'],
  ['bash -c for loop body', ['bash', '-c', 'for f in a b; do rm $f; done'], false, '"rm"'],
  ['bash -c assignment with a substitution', ['bash', '-c', 'a=$(shutdown now)'], false, '"shutdown"'],
  ['bash -c output process substitution', ['bash', '-c', 'ls > >(xargs rm)'], false, '"rm"'],
  ['bash -c exec builtin', ['bash', '-c', 'exec rm x'], false, '"rm"'],
  ['env --split-string=', ['env', '--split-string=rm -rf x'], false, '"rm"'],
  ['env GIT_SSH_COMMAND', ['env', 'GIT_SSH_COMMAND=rm -rf x', 'git', 'fetch'], false, 'cannot be proven safe'],
  ['python -Sc clustered', ['python', '-Sc', "import os; os.system('reboot')"], false, '"reboot"'],
  ['perl -ne clustered', ['perl', '-ne', 'system("dd if=x")'], false, '"dd"'],
  ['awk system()', ['awk', 'BEGIN { system("id") }'], false],
  ['find -exec sh -c with $0', ['find', '.', '-exec', 'sh', '-c', '$0', '{}', ';'], false, 'cannot be proven safe'],
  ['busybox applet', ['busybox', 'rm', 'x'], false, '"rm"'],
  ['cmd /c del', ['cmd', '/c', 'del x'], false, '"del"'],
  ['systemctl reboot (reboot by another name)', ['systemctl', 'reboot'], false, '"reboot"'],
  ['systemctl --force poweroff', ['systemctl', '--force', 'poweroff'], false, '"poweroff"'],
  ['systemctl isolate reboot.target', ['systemctl', 'isolate', 'reboot.target'], false, '"shutdown"'],
  ['systemctl status is still allowed', ['systemctl', 'status', 'ssh'], true],
  // allow list
  ['program not on the allow list', ['vim', 'x'], false, 'not on commandAllowList'],
  ['allowed wrapper around a program not on the allow list', ['env', 'vim', 'x'], false, '"vim" is not on commandAllowList'],
  ['bash -c with a program not on the allow list', ['bash', '-c', 'echo a; vim x'], false, '"vim" is not on commandAllowList'],
];

describe('command policy: bypass attempts (default lists)', () => {
  it('has at least 30 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });
  for (const [what, argv, allowed, fragment] of CASES) {
    it(`${allowed ? 'allows' : 'refuses'} ${what}`, () => {
      const d = analyze(argv, lists);
      expect(d.allowed, `${JSON.stringify(argv)}: ${d.reason}`).toBe(allowed);
      if (fragment) expect(d.reason).toContain(fragment);
    });
  }
});

describe('command policy: modes and lists', () => {
  it('sudo mode bypasses the allow list only', () => {
    expect(analyze(['vim', 'x'], { ...lists, sudo: true }).allowed).toBe(true);
    const r = analyze(['env', 'rm', 'x'], { ...lists, sudo: true });
    expect(r.allowed).toBe(false);
    expect(r.reason).toContain('sudo mode');
    expect(analyze(['bash', '-c', 'ls; shutdown now'], { ...lists, sudo: true }).allowed).toBe(false);
  });
  it('an empty allow list blocks everything unless sudo', () => {
    const r = analyze(['echo', 'x'], { allow: [], deny: ['rm'], sudo: false });
    expect(r.allowed).toBe(false);
    expect(r.reason).toContain('commandAllowList is empty');
    expect(analyze(['echo', 'x'], { allow: [], deny: ['rm'], sudo: true }).allowed).toBe(true);
  });
  it('deny beats allow', () => {
    expect(analyze(['rm', 'x'], { allow: ['rm'], deny: ['rm'], sudo: false }).allowed).toBe(false);
  });
  it('lists every program the command would start', () => {
    expect(analyze(['nice', 'env', 'A=1', 'bash', '-c', 'ls | grep x'], { ...lists, allow: [...lists.allow] }).programs).toEqual(
      expect.arrayContaining(['nice', 'env', 'bash', 'ls', 'grep']),
    );
  });
});

describe('toArgv', () => {
  it('splits with quotes and escapes', () => {
    expect(toArgv(`echo 'a b' "c \\"d\\"" e\\ f`)).toEqual(['echo', 'a b', 'c "d"', 'e f']);
  });
  for (const bad of ['ls | grep x', 'ls; rm x', 'ls && rm x', 'ls || rm x', 'echo x > f', 'cat < f', 'echo `id`', 'echo $(id)', 'sleep 1 &']) {
    it(`refuses "${bad}" (needs a shell)`, () => {
      expect(() => toArgv(bad)).toThrow(/needs a shell/);
    });
  }
});
