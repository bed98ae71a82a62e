import { Readable } from 'node:stream';

export interface StoredArtifact {
  body: Readable;
  contentType: string;
  size: number;
}

/**
 * Where transcripts and recordings live. An artifact is stored under a name
 * (`artifactKey`); the storage answers the key it can be read back by, which
 * the run keeps.
 */
export interface ArtifactStorage {
  /** Stores `body` and answers its key, once it is stored. */
  put(name: string, body: Buffer, contentType: string): Promise<string>;
  /** Null when nothing is stored under `key`. */
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
