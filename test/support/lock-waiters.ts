import { DataSource } from 'typeorm';
import { waitFor } from './wait-for';

/**
 * The backends waiting on a lock the backend `holderPid` holds, directly or
 * queued behind another such waiter, once at least `count` are: what a race
 * test waits for before it lets the lock go, so the racers are known to be
 * under way together rather than assumed to be after a pause. Those
 * waiting on it directly come first.
 */
export function waitersOn(dataSource: DataSource, holderPid: number, count: number, what: string): Promise<number[]> {
  return waitFor(
    async () => {
      const blocked: Array<{ pid: number; blockers: number[] }> = await dataSource.query(
        `SELECT pid, pg_blocking_pids(pid) AS blockers FROM pg_stat_activity WHERE cardinality(pg_blocking_pids(pid)) > 0`,
      );
      const behind = new Set([holderPid]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const { pid, blockers } of blocked) {
          if (!behind.has(pid) && blockers.some((blocker) => behind.has(blocker))) {
            behind.add(pid);
            grew = true;
          }
        }
      }
      behind.delete(holderPid);
      const direct = blocked.filter(({ blockers }) => blockers.includes(holderPid)).map(({ pid }) => pid);
      return behind.size >= count ? [...direct, ...[...behind].filter((pid) => !direct.includes(pid))] : undefined;
    },
    { what },
  );
}

/** The backend of a query runner's connection (one that holds a lock, for `waitersOn`). */
export async function backendPid(runner: { query(sql: string): Promise<Array<{ pid: number }>> }): Promise<number> {
  const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
  return pid;
}
