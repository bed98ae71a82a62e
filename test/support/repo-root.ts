import { resolve } from 'node:path';

/** The checkout the tests run in: scripts and the build live here. */
export const REPO_ROOT = resolve(__dirname, '../..');
