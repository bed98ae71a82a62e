import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
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

  afterEach(() => rmSync(root, { recursive: true, force: true }));

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
