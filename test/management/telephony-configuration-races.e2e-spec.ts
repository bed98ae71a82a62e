import { TelephonyConfiguration } from '@app/persistence';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { backendPid, waitersOn } from '../support/lock-waiters';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { createSandboxConfiguration } from './management-helpers';

const PATH = '/api/v1/telephony-configurations';

/**
 * A change and a delete of one configuration at the same moment. Each test
 * holds a row lock in a transaction of its own to stop one request at a
 * chosen statement, so the requests interleave the same way on every run.
 */
describe('management API: a telephony configuration patched and deleted at once', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let first: { id: number };
  let target: { id: number };
  const held: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
  });
  beforeEach(async () => {
    org = await createOrganization(apps.dataSource);
    first = await createSandboxConfiguration(apps, org);
    target = await createSandboxConfiguration(apps, org, { name: 'Target' });
  });
  afterEach(async () => {
    for (const release of held.splice(0)) await release();
  });
  afterAll(() => apps.close());

  /** Takes a row lock in its own transaction, held until `release` (or the end of the test). */
  async function holdLock(sql: string, params: unknown[]): Promise<{ pid: number; release: () => Promise<void> }> {
    const runner = apps.dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    const pid = await backendPid(runner);
    await runner.query(sql, params);
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await runner.rollbackTransaction();
      await runner.release();
    };
    held.push(release);
    return { pid, release };
  }

  /** The backend waiting on a lock `pid` holds, once one is. */
  const waiterOn = async (pid: number, what: string) => (await waitersOn(apps.dataSource, pid, 1, what))[0];

  /** A request's answer, and whether it has come yet. */
  function tracked<T>(request: Promise<T>): { answer: Promise<T>; answered: () => boolean } {
    let done = false;
    const answer = request.finally(() => {
      done = true;
    });
    return { answer, answered: () => done };
  }

  /** Until the request has answered, or waits on a lock `pid` holds. */
  const answeredOrWaitingOn = (request: { answered: () => boolean }, pid: number, what: string) =>
    waitFor(async () => {
      if (request.answered()) return true;
      const [row] = await apps.dataSource.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid]);
      return row ? true : undefined;
    }, { what });

  const organizationRows = () =>
    apps.dataSource.getRepository(TelephonyConfiguration).find({ where: { organizationId: org.organizationId }, order: { id: 'ASC' } });

  it('does not bring a configuration back when a DELETE comes between the PATCH reading it and writing it', async () => {
    // Making the target the default, the PATCH clears the old default's flag after it has read the target: holding
    // the old default's row stops it there.
    const oldDefault = await holdLock('SELECT id FROM telephony_configurations WHERE id = $1 FOR UPDATE', [first.id]);
    const patch = tracked(apps.client.patch(`${PATH}/${target.id}`, { is_default_outbound: true, name: 'Renamed' }, { key: org.adminKey }));
    const patchPid = await waiterOn(oldDefault.pid, 'the PATCH to stop at the old default');

    const remove = tracked(apps.client.delete(`${PATH}/${target.id}`, { key: org.adminKey }));
    await answeredOrWaitingOn(remove, patchPid, 'the DELETE to answer or to wait for the PATCH');
    await oldDefault.release();
    const [patched, deleted] = await Promise.all([patch.answer, remove.answer]);

    // One after the other: the PATCH changed the configuration it read, then the DELETE removed it.
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: target.id, name: 'Renamed', is_default_outbound: true });
    expect(deleted.status).toBe(204);
    expect((await organizationRows()).map((row) => row.id)).toEqual([first.id]);
  });

  it('answers 404 to a PATCH sent while a DELETE is under way, and creates nothing', async () => {
    // A KEY SHARE lock on the target stops the DELETE at its own row lock, after it has locked the organization.
    const reader = await holdLock('SELECT id FROM telephony_configurations WHERE id = $1 FOR KEY SHARE', [target.id]);
    const remove = tracked(apps.client.delete(`${PATH}/${target.id}`, { key: org.adminKey }));
    const deletePid = await waiterOn(reader.pid, 'the DELETE to stop at the configuration');

    const patch = tracked(apps.client.patch(`${PATH}/${target.id}`, { name: 'Renamed' }, { key: org.adminKey }));
    await answeredOrWaitingOn(patch, deletePid, 'the PATCH to answer or to wait for the DELETE');
    await reader.release();
    const [deleted, patched] = await Promise.all([remove.answer, patch.answer]);

    expect(deleted.status).toBe(204);
    expect(patched.status).toBe(404);
    expect(patched.body.code).toBe('telephony_configuration_not_found');
    expect((await organizationRows()).map((row) => row.id)).toEqual([first.id]);
  });
});
