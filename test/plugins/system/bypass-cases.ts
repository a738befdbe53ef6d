/**
 * The bypass table: argvs that try to reach a program on commandDenyList (or one not on commandAllowList), with
 * the policy's expected decision under the default lists of SPEC. policy.test.ts checks the pure function;
 * deny-jail.e2e.test.ts runs every case for real through run_command, in normal and in sudo mode.
 */
import { DEFAULT_COMMAND_ALLOW_LIST, DEFAULT_COMMAND_DENY_LIST } from '../../../kernel/config/kernel-keys.js';

export const lists = {
  allow: [
    ...DEFAULT_COMMAND_ALLOW_LIST,
    'env',
    'nice',
    'nohup',
    'timeout',
    'xargs',
    'sudo',
    'python3',
    'perl',
    'ruby',
    'watch',
    'stdbuf',
    'sh',
  ],
  deny: [...DEFAULT_COMMAND_DENY_LIST],
  sudo: false,
};

/**
 * A denied program's bytes put in a writable folder by other means than its stubbed path, and started from there
 * (issue 35). Each is started as `bash <script>`, `node <script>` or `python3 <script>`, which passes the argv
 * check, so only the operating system can stop it: under the stubs alone (`commandIsolation: required`) they
 * delete "sentinel"; under strict isolation (what `auto` is wherever it can be set up) they cannot start.
 * Placeholders: `{PORT}` is a loopback HTTP server the test starts, serving the host's rm at /rm and busybox at
 * /busybox; `{DEB}` a busybox .deb from the apt cache. Before the command the test puts a copy of rm at
 * tools/x and a copy of busybox at tools/busybox (busybox picks its applet by the name it is started as).
 */
export const WRITABLE_COPY_SCRIPTS: Record<string, string> = {
  'run-copy.sh': './tools/x sentinel\n',
  'run-busybox-copy.sh': './tools/busybox rm sentinel\n',
  'ld.sh': 'for l in /lib64/ld-linux*.so.* /lib/ld-linux*.so.* /lib/*/ld-linux*.so.*; do [ -e "$l" ] && "$l" ./tools/x sentinel; done\n',
  'memfd.py':
    "import os\nfd = os.memfd_create('x')\nos.write(fd, open('tools/x', 'rb').read())\nos.execv(f'/proc/self/fd/{fd}', ['x', 'sentinel'])\n",
  'curl.sh': 'curl -sf -o dl-rm http://127.0.0.1:{PORT}/rm && chmod +x dl-rm && ./dl-rm sentinel\n',
  'wget.sh':
    'mkdir -p dl-bb && wget -q -O dl-bb/busybox http://127.0.0.1:{PORT}/busybox && chmod +x dl-bb/busybox && ./dl-bb/busybox rm sentinel\n',
  'fetch.mjs': [
    "import { chmodSync, writeFileSync } from 'node:fs';",
    "import { spawnSync } from 'node:child_process';",
    "const r = await fetch('http://127.0.0.1:{PORT}/rm');",
    "writeFileSync('dl-node', Buffer.from(await r.arrayBuffer()));",
    "chmodSync('dl-node', 0o755);",
    "const run = spawnSync('./dl-node', ['sentinel'], { stdio: 'inherit' });",
    'if (run.error) console.error(run.error.message);',
    'process.exit(run.status ?? 1);',
    '',
  ].join('\n'),
  'deb.sh': 'dpkg-deb -x "{DEB}" pkg && ./pkg/bin/busybox rm sentinel\n',
};

/** [what, argv, what it needs: programs that must be installed, `root`, `deb`] */
export const WRITABLE_COPY_CASES: Array<[string, string[], string[]]> = [
  ['a copy of rm made before the command', ['bash', 'run-copy.sh'], []],
  ['a copy of busybox made before the command', ['bash', 'run-busybox-copy.sh'], ['busybox']],
  ['the copy started through the dynamic loader', ['bash', 'ld.sh'], []],
  // Only a privileged pid namespace owner may forbid executing memory (vm.memfd_noexec): real root.
  ['the copy run from memory (memfd_create + execve)', ['python3', 'memfd.py'], ['python3', 'root']],
  ['rm downloaded from a loopback server with curl', ['bash', 'curl.sh'], ['curl']],
  ['busybox downloaded from a loopback server with wget', ['bash', 'wget.sh'], ['wget', 'busybox']],
  ['rm downloaded from a loopback server with node', ['node', 'fetch.mjs'], ['node']],
  ["busybox extracted from the apt cache's .deb", ['bash', 'deb.sh'], ['dpkg-deb', 'deb']],
];

/** [description, argv, allowed, reason fragment] */
export const CASES: Array<[string, string[], boolean, string?]> = [
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
  [
    'node -e fromCharCode',
    ['node', '-e', 'require("child_process").execSync(String.fromCharCode(114,109))'],
    false,
    'cannot be proven safe',
  ],
  [
    'node -e spawning a variable',
    ['node', '-e', "const c=process.argv[1];require('child_process').execSync(c)"],
    false,
    'cannot be proven safe',
  ],
  ['node -p', ['node', '-p', "require('child_process').execSync('shutdown now')"], false, '"shutdown"'],
  ['python -c os.system', ['python', '-c', "import os; os.system('rm -rf x')"], false, '"rm"'],
  ['python3 -c subprocess', ['python3', '-c', "import subprocess; subprocess.run(['dd','if=/dev/zero'])"], false, '"dd"'],
  ['python -c shutil.rmtree', ['python', '-c', "import shutil; shutil.rmtree('x')"], false, '"rm"'],
  ['python -c exec of a decoded string', ['python', '-c', "exec(__import__('base64').b64decode('cm0='))"], false, 'cannot be proven safe'],
  // Inline code that builds a name other than with + or join, or reaches a function by a name not written in it
  // (issue 35): on the old check each of these deleted "sentinel" through the interpreter's own library.
  [
    'python -c str.format into os.__dict__',
    ['python3', '-c', "import os; os.__dict__['unlin{}'.format('k')]('sentinel')"],
    false,
    'cannot be proven safe',
  ],
  ['python -c % formatting', ['python3', '-c', "import os; os.__dict__['remov%s' % 'e']('sentinel')"], false, 'cannot be proven safe'],
  ['python -c f-string', ['python3', '-c', `import os; os.__dict__[f'unlin{"k"}']('sentinel')`], false, 'cannot be proven safe'],
  ['python -c adjacent literals', ['python3', '-c', "import os; os.__dict__['unl' 'ink']('sentinel')"], false, 'cannot be proven safe'],
  [
    'python -c os.__dict__ with a key from argv',
    ['python3', '-c', "import os, sys; os.__dict__[sys.argv[1]]('sentinel')", 'unlink'],
    false,
    'cannot be proven safe',
  ],
  ['python -c vars(os)', ['python3', '-c', "import os, sys; vars(os)[sys.argv[1]]('sentinel')", 'unlink'], false, 'cannot be proven safe'],
  [
    'python -c getattr',
    ['python3', '-c', "import os, sys; getattr(os, sys.argv[1])('sentinel')", 'remove'],
    false,
    'cannot be proven safe',
  ],
  ['python -c "".join', ['python3', '-c', "import os; os.__dict__[''.join(['un', 'link'])]('sentinel')"], false, 'cannot be proven safe'],
  ['node -e .concat', ['node', '-e', "const fs=require('fs');fs['unlin'.concat('kSync')]('sentinel')"], false, 'cannot be proven safe'],
  [
    'node -e fs[...] with a key from argv',
    ['node', '-e', "const fs=require('fs');fs[process.argv[1]]('sentinel')", 'unlinkSync'],
    false,
    'cannot be proven safe',
  ],
  [
    'node -e optional chaining ?.[...]',
    ['node', '-e', "const fs=require('fs');fs?.[process.argv[1]]('sentinel')", 'unlinkSync'],
    false,
    'cannot be proven safe',
  ],
  [
    'node -e Object.values and a name test',
    ['node', '-e', "const fs=require('fs');Object.values(fs).find((f)=>f?.name?.startsWith('unlinkS'))('sentinel')"],
    false,
    'cannot be proven safe',
  ],
  [
    'node -e a computed key in destructuring',
    ['node', '-e', "const {[process.argv[1]]: f}=require('fs');f('sentinel')", 'unlinkSync'],
    false,
    'cannot be proven safe',
  ],
  ['node -e template literal', ['node', '-e', "require('fs')[`unlin${'k'}Sync`]('sentinel')"], false, 'cannot be proven safe'],
  [
    'node -e Reflect.get',
    ['node', '-e', "Reflect.get(require('fs'), process.argv[1])('sentinel')", 'unlinkSync'],
    false,
    'cannot be proven safe',
  ],
  [
    'node -e base64 name',
    ['node', '-e', "require('fs')[Buffer.from('dW5saW5rU3luYw==','base64').toString()]('sentinel')"],
    false,
    'cannot be proven safe',
  ],
  ['perl -e concatenation with .', ['perl', '-MPOSIX', '-e', '&{"POSIX::unl"."ink"}("sentinel")'], false, 'cannot be proven safe'],
  [
    'perl -e a symbolic reference to a name from argv',
    ['perl', '-MPOSIX', '-e', 'my $f = $ARGV[0]; &$f("sentinel")', 'POSIX::unlink'],
    false,
    'cannot be proven safe',
  ],
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
  // programs that delete files through an allowed program (issue 35): they count as rm
  ['unlink (on the default deny list)', ['unlink', 'sentinel'], false, '"unlink" is on commandDenyList'],
  ['shred -u (on the default deny list)', ['shred', '-u', 'sentinel'], false, '"shred" is on commandDenyList'],
  ['git clean -fd', ['git', 'clean', '-fd'], false, '"rm"'],
  ['git clean -xdf', ['git', 'clean', '-xdf'], false, '"rm"'],
  ['git clean --force', ['git', 'clean', '--force'], false, '"rm"'],
  ['git clean without -f (clean.requireForce can be off)', ['git', '-c', 'clean.requireForce=false', 'clean', '-d'], false, '"rm"'],
  ['git -C . clean -f -x', ['git', '-C', '.', 'clean', '-f', '-x'], false, '"rm"'],
  ['git clean -f -e -n (an exclude pattern, not a dry run)', ['git', 'clean', '-f', '-e', '-n'], false, '"rm"'],
  ['bash -c git clean', ['bash', '-c', 'git status && git clean -fdx'], false, '"rm"'],
  ['git rm -f', ['git', 'rm', '-f', 'sentinel'], false, '"rm"'],
  ['git rm -- --cached (a file named --cached)', ['git', 'rm', '-f', '--', '--cached', 'sentinel'], false, '"rm"'],
  ['rsync --delete', ['rsync', '-a', '--delete', 'empty/', './'], false, '"rm"'],
  ['rsync --remove-source-files', ['rsync', '-a', '--remove-source-files', 'sentinel', '/tmp/'], false, '"rm"'],
  ['rsync -e runs a program', ['rsync', '-e', 'rm -rf x', 'a', 'b:'], false, '"rm"'],
  ['tar --remove-files', ['tar', '-cf', 'keel-test.tar', '--remove-files', 'sentinel'], false, '"rm"'],
  ['tar --remove-f (an abbreviation)', ['tar', '-cf', 'keel-test.tar', '--remove-f', 'sentinel'], false, '"rm"'],
  ['tar --to-command', ['tar', '-xf', 'keel-test.tar', '--to-command=rm x'], false, '"rm"'],
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
