/**
 * Compiled with `tsc --noEmit` with consumer.ts (test/api/types.test.ts): the contracts the
 * types enforce. Each `@ts-expect-error` must meet an error, or the compilation fails.
 */
import type { JobContext, Queue } from 'filespooler';
import { type OpenJob, type ProcessQueueOptions, processQueue } from 'filespooler/lowlevel';

/**
 * An opened job is plain (a descriptor, an offset) or decoded (a stream, the decoder): narrowed by its kind, never
 * cast.
 */
export function payloadStart(job: OpenJob): number {
  // @ts-expect-error a job may be decoded: its payload is a descriptor only once narrowed
  const fd: number = job.payload;
  // @ts-expect-error only a plain job has an offset
  void job.payloadOffset;
  if (job.kind === 'plain') return job.payload + job.payloadOffset + fd;
  job.decoded.abort();
  job.payload.destroy();
  return 0;
}

/** A run's executor: a command or a function, exactly one. */
export async function executors(q: Queue, fn: (job: JobContext) => Promise<void>): Promise<void> {
  await processQueue(q, { command: 'true', params: ['a'], allowJobParams: true, timeout: 5 });
  await processQueue(q, { run: fn, timeout: 5, onError: 'leave' });
  // @ts-expect-error both a command and a function
  await processQueue(q, { command: 'true', run: fn });
  // @ts-expect-error neither a command nor a function
  await processQueue(q, { onError: 'leave' });
  // @ts-expect-error a function takes no command's parameters
  await processQueue(q, { run: fn, params: ['x'] });
  const either: ProcessQueueOptions = q.dir === '' ? { command: 'true' } : { run: fn };
  await processQueue(q, either);
  // Queue.process takes the executor apart, as it always has.
  await q.process(fn, { maxJobs: 1 });
  await q.process(['cat', '-A'], { params: ['x'], ignorePayload: true });
}
