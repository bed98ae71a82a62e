import { Readable } from 'node:stream';

export interface StoredArtifact {
  body: Readable;
  contentType: string;
  size: number;
}

/** Where transcripts and recordings live. Keys are relative paths such as `runs/1/1042-recording.wav`. */
export interface ArtifactStorage {
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** Null when nothing is stored under `key`. */
  get(key: string): Promise<StoredArtifact | null>;
}

export const ARTIFACT_STORAGE = Symbol('ARTIFACT_STORAGE');

export type ArtifactKind = 'recording' | 'transcript';
export const ARTIFACT_KINDS: readonly ArtifactKind[] = ['recording', 'transcript'];

/** Runs whose artifacts share a folder: a folder per run would mean a million folders for a million calls. */
export const RUNS_PER_FOLDER = 1000;

/**
 * Where a run's artifact goes. The key is stored with the run, so a change
 * of layout leaves earlier artifacts readable under their old keys.
 */
export function artifactKey(runId: number, kind: ArtifactKind, extension: string): string {
  return `runs/${Math.floor(runId / RUNS_PER_FOLDER)}/${runId}-${kind}.${extension}`;
}
