import { Worker } from 'bullmq';
import { closeWorkers } from './worker-shutdown.service';

describe('closeWorkers', () => {
  const fakeWorker = (pause: () => Promise<void>) => ({
    isPaused: () => true,
    pause: jest.fn(pause),
    close: jest.fn(async () => undefined),
    disconnect: jest.fn(async () => undefined),
  });

  it("closes every worker when one's pause fails (Redis away again), once the grace period is over", async () => {
    const failing = fakeWorker(() => Promise.reject(new Error('Connection is closed.')));
    const pausing = fakeWorker(async () => undefined);
    const report = jest.fn();
    const started = Date.now();

    await closeWorkers([failing, pausing] as unknown as Worker[], 200, report);

    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(report).toHaveBeenCalledWith('redis_away');
    expect(failing.close).toHaveBeenCalledWith(true);
    expect(pausing.close).toHaveBeenCalledWith(true);
  });

  it('closes them at once when every pause returned', async () => {
    const workers = [fakeWorker(async () => undefined), fakeWorker(async () => undefined)];
    const report = jest.fn();
    const started = Date.now();

    await closeWorkers(workers as unknown as Worker[], 5_000, report);

    expect(Date.now() - started).toBeLessThan(1_000);
    expect(report).toHaveBeenCalledWith('drained');
    for (const worker of workers) expect(worker.close).toHaveBeenCalledWith(true);
  });
});
