import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { artifactKey } from './artifact-storage';
import { LocalArtifactStorage } from './local-artifact-storage';

async function readAll(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('LocalArtifactStorage', () => {
  let root: string;
  let storage: LocalArtifactStorage;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'va-artifacts-'));
    storage = new LocalArtifactStorage(root);
  });

  afterEach(async () => {
    await storage.onApplicationShutdown();
    rmSync(root, { recursive: true, force: true });
  });

  it('stores an artifact and reads it back with its size and content type', async () => {
    await storage.put('runs/7/transcript.json', Buffer.from('{"turns":[]}'));
    const stored = await storage.get('runs/7/transcript.json');
    expect(stored).toMatchObject({ size: 12, contentType: 'application/json' });
    expect(await readAll(stored!.body)).toBe('{"turns":[]}');
  });

  it('leaves no temporary file behind and replaces an artifact stored twice', async () => {
    await storage.put('runs/7/recording.wav', Buffer.from('first'));
    await storage.put('runs/7/recording.wav', Buffer.from('second'));
    expect(readdirSync(join(root, 'runs/7'))).toEqual(['recording.wav']);
    expect(await readAll((await storage.get('runs/7/recording.wav'))!.body)).toBe('second');
  });

  it('makes the directory again when it was removed after it was made', async () => {
    await storage.put('runs/8/transcript.json', Buffer.from('a'));
    rmSync(join(root, 'runs'), { recursive: true, force: true });
    await storage.put('runs/8/recording.wav', Buffer.from('b'));
    expect(await readAll((await storage.get('runs/8/recording.wav'))!.body)).toBe('b');
  });

  it('keeps two concurrent writes of one key apart and ends with one whole file', async () => {
    const large = Buffer.alloc(256 * 1024, 'r');
    await Promise.all([storage.put('runs/9/recording.wav', large), storage.put('runs/9/recording.wav', large)]);
    expect(readdirSync(join(root, 'runs/9'))).toEqual(['recording.wav']);
    expect(await readAll((await storage.get('runs/9/recording.wav'))!.body)).toBe(large.toString('utf8'));
    rmSync(join(root, 'runs'), { recursive: true, force: true });
    await storage.put('runs/9/recording.wav', large);
    expect(await readAll((await storage.get('runs/9/recording.wav'))!.body)).toBe(large.toString('utf8'));
  });

  it('stores many artifacts written at once, each whole, across new folders', async () => {
    const keys = Array.from({ length: 300 }, (_, index) => artifactKey(index * 7, 'transcript', 'json'));
    await Promise.all(keys.map((key, index) => storage.put(key, Buffer.from(`{"n":${index}}`))));
    const bodies = await Promise.all(keys.map(async (key) => readAll((await storage.get(key))!.body)));
    expect(bodies).toEqual(keys.map((_, index) => `{"n":${index}}`));
    expect(readdirSync(join(root, 'runs')).sort()).toEqual(['0', '1', '2']);
  });

  it('fails the write that cannot be made, with its cause, and not the others of its batch', async () => {
    writeFileSync(join(root, 'runs'), 'a file where a folder should be');
    const failing = storage.put('runs/1/transcript.json', Buffer.from('x'));
    const other = storage.put('other/transcript.json', Buffer.from('y'));
    await expect(failing).rejects.toMatchObject({ code: 'ENOTDIR' });
    await other;
    expect(await readAll((await storage.get('other/transcript.json'))!.body)).toBe('y');
  });

  it('writes again after its writer thread was stopped', async () => {
    await storage.put('runs/3/transcript.json', Buffer.from('before'));
    await storage.onApplicationShutdown();
    await storage.put('runs/3/transcript.json', Buffer.from('after'));
    expect(await readAll((await storage.get('runs/3/transcript.json'))!.body)).toBe('after');
  });

  it('keys a run artifact by a folder of a thousand runs', () => {
    expect(artifactKey(1042, 'recording', 'wav')).toBe('runs/1/1042-recording.wav');
    expect(artifactKey(7, 'transcript', 'json')).toBe('runs/0/7-transcript.json');
  });

  it('answers null for an artifact that is not there', async () => {
    expect(await storage.get('runs/9/transcript.json')).toBeNull();
  });

  it('refuses a key that leaves the storage root', async () => {
    await expect(storage.put('../outside.json', Buffer.from('x'))).rejects.toThrow(/escapes the storage root/);
  });
});
