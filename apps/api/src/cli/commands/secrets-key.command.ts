import { randomUUID } from 'node:crypto';
import { link, open, readFile, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { newSecretsKey, parseSecretsKey } from '@app/config';
import { CliCommand } from '../cli-command';
import { CliFailure } from '../cli-failure';
import { CliIo } from '../cli-io';
import { CliUsageError } from '../cli-usage-error';
import { formatJsonLine } from '../format-json-line';
import { parseFlags } from '../parse-flags';

/**
 * Makes the file SECRETS_KEY_FILE names, holding a new key, unless it holds
 * one already, which is kept: the key must stay the same for as long as
 * the credentials sealed and the links signed with it are to be read.
 * docker-compose.yml runs it before the apps. The key is never printed.
 */
export const secretsKeyCommand: CliCommand = {
  name: 'secrets-key',
  synopsis: '--file <path> [--json]',
  summary: 'Make a file holding a new SECRETS_KEY, unless it holds one (for SECRETS_KEY_FILE)',
  async run(args: readonly string[], io: CliIo): Promise<void> {
    const flags = parseFlags(args, { file: 'string', json: 'boolean' });
    if (!flags.file) throw new CliUsageError('--file is required');
    const made = await keepOrMake(flags.file);
    if (flags.json) io.out(formatJsonLine({ file: flags.file, made }));
    else io.out(made ? `Made a new key in ${flags.file}.` : `${flags.file} holds a key already; kept it.`);
  },
};

/** Answers whether it made the key. Two at once (two replicas starting) keep one key: the first one linked in. */
async function keepOrMake(file: string): Promise<boolean> {
  if (await keptKey(file)) return false;
  // Written whole and flushed under another name, then linked in: the file is never seen half written (nor empty
  // after a crash of the host), and a link fails if another process made it first.
  const draft = `${file}.${randomUUID()}.new`;
  try {
    const handle = await open(draft, 'wx', 0o600);
    try {
      await handle.writeFile(`${newSecretsKey()}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    const linked = await link(draft, file).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') return false;
        throw error;
      },
    );
    if (linked) {
      await syncFolder(dirname(file));
      return true;
    }
    // Made by another meanwhile: that one is the key, read (and checked) as any kept key is. Still nothing to read
    // there: the name is taken by something that is not a file holding a key (a link to a missing file, say).
    if (await keptKey(file)) return false;
    throw new CliFailure(`${file} exists but cannot be read as a file (a link to a missing file?); it was left as it is`);
  } catch (error) {
    if (error instanceof CliFailure) throw error;
    throw new CliFailure(`${file} cannot be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}

/** Whether the file holds a key already (a file holding anything else fails); false when there is no file to read. */
async function keptKey(file: string): Promise<boolean> {
  const held = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw new CliFailure(`${file} cannot be read (${error.code ?? error.message})`);
  });
  if (held === null) return false;
  const parsed = parseSecretsKey(held);
  if (!parsed.ok) throw new CliFailure(`${file} ${parsed.problem}; it was left as it is`);
  return true;
}

/** Makes a new name in the folder survive a crash of the host; a file system that cannot flush a folder is let be. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r').catch(() => null);
  if (!handle) return;
  try {
    await handle.sync().catch(() => undefined);
  } finally {
    await handle.close();
  }
}
