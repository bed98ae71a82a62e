import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
export const API_MAIN = join(ROOT, 'dist/apps/api/apps/api/src/main.js');
export const DIALER_MAIN = join(ROOT, 'dist/apps/dialer/apps/dialer/src/main.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds both apps unless their compiled entry points are newer than every source file. */
export function buildApps(): void {
  const sources = Math.max(newestSource(join(ROOT, 'apps')), newestSource(join(ROOT, 'libs')));
  for (const [app, main] of [
    ['api', API_MAIN],
    ['dialer', DIALER_MAIN],
  ] as const) {
    if (existsSync(main) && statSync(main).mtimeMs > sources) continue;
    execFileSync(join(ROOT, 'node_modules/.bin/nest'), ['build', app], { cwd: ROOT, stdio: 'inherit' });
  }
}
