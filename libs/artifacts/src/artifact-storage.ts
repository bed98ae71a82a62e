import { Readable } from 'node:stream';

/** Bytes `start` to `end` of an artifact, both included. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * An artifact found and opened: it is held open until `read`'s stream has
 * been read or destroyed, or `close` is called, one of which must happen.
 */
export interface StoredArtifact {
  contentType: string;
  size: number;
  /** Its bytes, or those of `range` (within its size); the artifact is closed once the stream ends or is destroyed. */
  read(range?: ByteRange): Readable;
  /** Closes it unread (a HEAD, a range it cannot answer). */
  close(): Promise<void>;
}

/**
 * Where transcripts and recordings live. An artifact is stored under a name
 * (`artifactKey`); the storage answers the key it can be read back by, which
 * the run keeps.
 */
export interface ArtifactStorage {
  /** Stores `body` and answers its key, once it is stored. */
  put(name: string, body: Buffer, contentType: string): Promise<string>;
  /** Opens what is stored under `key`; null when nothing is (any more). */
  get(key: string): Promise<StoredArtifact | null>;
}

export const ARTIFACT_STORAGE = Symbol('ARTIFACT_STORAGE');

export type ArtifactKind = 'recording' | 'transcript';
export const ARTIFACT_KINDS: readonly ArtifactKind[] = ['recording', 'transcript'];

/**
 * Runs whose artifacts shared a folder when each was a file of its own (a
 * folder per run would have meant a million folders for a million calls); names keep that form.
 */
export const RUNS_PER_FOLDER = 1000;

/**
 * The name a run's artifact is stored under. The storage's key is kept with
 * the run, so a change of layout leaves earlier artifacts readable under
 * their old keys.
 */
export function artifactKey(runId: number, kind: ArtifactKind, extension: string): string {
  return `runs/${Math.floor(runId / RUNS_PER_FOLDER)}/${runId}-${kind}.${extension}`;
}
