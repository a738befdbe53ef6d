/**
 * Which local files send_file may send (issue 35).
 *
 * - A file under `$KEEL_HOME/downloads` may be sent by anyone. That folder is where every file Keel produces while
 *   working lands (browser screenshots and downloads, generated images and speech, chat and mail attachments), so
 *   "a file the action itself produced" needs no record of its own: it is a file under downloads.
 * - Any other file (`keel.config.yaml`, `/etc/passwd`, a project folder) needs an admin, the kernel's decision
 *   (`kernel:policy`; without it nobody is), and, like every privileged use, not on untrusted work unless the local
 *   operator is behind it: a web page must not make an admin's agent send secrets anywhere.
 *
 * Both sides are resolved with realpath first, so neither a symlink placed in downloads nor `..` in the path
 * reaches a file outside; the resolved path is what is sent, so the link cannot be changed between check and send.
 */
import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { forbiddenError, humanBehind, isUntrusted, pluginError, type PluginContext, type SkillCallContext } from '../../../sdk/index.js';

/** The folder anyone may send from, resolved (undefined while it does not exist). */
async function downloadsDir(home: string): Promise<string | undefined> {
  try {
    return await realpath(join(home, 'downloads'));
  } catch {
    return undefined;
  }
}

function isInside(file: string, dir: string): boolean {
  const rel = relative(dir, file);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/**
 * The real path of a file send_file may send for this call, or a coded error saying why not: a relative path, no
 * such file, not a regular file (KEEL_E_INVALID_ARGUMENT), or a file outside downloads for someone who may not send
 * it (KEEL_E_FORBIDDEN).
 */
export async function sendableFile(ctx: PluginContext, call: SkillCallContext, path: string): Promise<string> {
  if (!isAbsolute(path)) throw pluginError('KEEL_E_INVALID_ARGUMENT', `path must be absolute: "${path}".`);
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    throw pluginError('KEEL_E_INVALID_ARGUMENT', `No file at ${path}.`);
  }
  if (!(await stat(real)).isFile()) throw pluginError('KEEL_E_INVALID_ARGUMENT', `${path} is not a file.`);
  const downloads = await downloadsDir(ctx.home);
  if (downloads && isInside(real, downloads)) return real;

  const where = real === path ? path : `${path} (which is ${real})`;
  const allowed = `send_file sends files from ${join(ctx.home, 'downloads')} for anyone`;
  if (ctx.use('kernel:policy')?.isAdmin(call.actor) !== true) {
    throw forbiddenError(`${allowed}; ${where} is outside it, and only an admin may send other files.`);
  }
  if (isUntrusted(call.actor) && humanBehind(call.actor)?.kind !== 'operator') {
    throw forbiddenError(
      `${allowed}; ${where} is outside it, and this work is untrusted (it has read a web page, an email, a non-admin chat or knowledge content), ` +
        'so a file from elsewhere is sent only when the local operator asks.',
    );
  }
  return real;
}
