import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAppConfig } from '@app/config';
import { CliIo } from '../cli-io';
import { secretsKeyCommand } from './secrets-key.command';

describe('the secrets-key command', () => {
  let dir: string;
  let out: string[];
  const io: CliIo = { out: (text) => out.push(text), err: () => undefined };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'va-secrets-key-'));
    out = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('makes a file holding a new key, readable by its owner only, that the apps take as SECRETS_KEY_FILE, and never prints it', async () => {
    const file = join(dir, 'secrets.key');
    await secretsKeyCommand.run(['--file', file, '--json'], io);
    expect(out.map((line) => JSON.parse(line))).toEqual([{ file, made: true }]);
    const key = readFileSync(file, 'utf8').trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(out.join('\n')).not.toContain(key);
    expect(loadAppConfig({ SECRETS_KEY_FILE: file }).secretsKey).toEqual(Buffer.from(key, 'hex'));
    // Nothing but the key file is left behind.
    expect(readdirSync(dir)).toEqual(['secrets.key']);
  });

  it('keeps the key a file holds, however often it runs', async () => {
    const file = join(dir, 'secrets.key');
    await secretsKeyCommand.run(['--file', file], io);
    const key = readFileSync(file, 'utf8');
    await secretsKeyCommand.run(['--file', file], io);
    expect(readFileSync(file, 'utf8')).toBe(key);
    expect(out).toEqual([`Made a new key in ${file}.`, `${file} holds a key already; kept it.`]);
  });

  it('leaves one key when several run at once (replicas starting together), and every one of them answers it', async () => {
    const file = join(dir, 'secrets.key');
    await Promise.all(Array.from({ length: 8 }, () => secretsKeyCommand.run(['--file', file, '--json'], io)));
    const made = out.map((line) => JSON.parse(line).made as boolean);
    expect(made.filter(Boolean)).toHaveLength(1);
    expect(readdirSync(dir)).toEqual(['secrets.key']);
  });

  it('fails on a file that holds something that is not a key, and leaves it as it is', async () => {
    const file = join(dir, 'secrets.key');
    writeFileSync(file, 'a passphrase');
    await expect(secretsKeyCommand.run(['--file', file], io)).rejects.toThrow(`${file} must be 32 bytes`);
    expect(readFileSync(file, 'utf8')).toBe('a passphrase');
  });

  it('fails saying why when the file cannot be made, and asks for --file', async () => {
    const file = join(dir, 'no-such-folder', 'secrets.key');
    await expect(secretsKeyCommand.run(['--file', file], io)).rejects.toThrow(`${file} cannot be written (ENOENT)`);
    await expect(secretsKeyCommand.run([], io)).rejects.toThrow('--file is required');
  });

  it('fails on a name that is a link to a missing file, once, leaving no drafts behind', async () => {
    const file = join(dir, 'secrets.key');
    symlinkSync(join(dir, 'gone', 'secrets.key'), file);
    await expect(secretsKeyCommand.run(['--file', file], io)).rejects.toThrow(`${file} exists but cannot be read as a file`);
    expect(readdirSync(dir)).toEqual(['secrets.key']);
    expect(existsSync(join(dir, 'gone'))).toBe(false);
  });
});
