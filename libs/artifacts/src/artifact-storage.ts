import { Readable } from 'node:stream';

export interface StoredArtifact {
  body: Readable;
  contentType: string;
  size: number;
}

/** Where transcripts and recordings live. Keys are relative paths such as `runs/42/recording.wav`. */
export interface ArtifactStorage {
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** Null when nothing is stored under `key`. */
  get(key: string): Promise<StoredArtifact | null>;
}

export const ARTIFACT_STORAGE = Symbol('ARTIFACT_STORAGE');

export type ArtifactKind = 'recording' | 'transcript';
export const ARTIFACT_KINDS: readonly ArtifactKind[] = ['recording', 'transcript'];

export function artifactKey(runId: number, kind: ArtifactKind, extension: string): string {
  return `runs/${runId}/${kind}.${extension}`;
}
