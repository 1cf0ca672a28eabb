/**
 * Compiled with `tsc --noEmit` against the published types (dist/index.d.ts through the package's
 * own "exports"), by test/api/types.test.ts: the API as a TypeScript user sees it.
 */
import type { Readable } from 'node:stream';
import {
  decodeHeader,
  encodeHeader,
  FsplError,
  type FsplErrorCode,
  type JobContext,
  LockedError,
  type Net,
  type PacketMetadata,
  type ProcessSummary,
  preparePacket,
  Queue,
  type QueuedJob,
  type ReadPacket,
  readPacket,
} from 'filespooler';
import { netMetricsText, type SimulationReport, simulate } from 'filespooler/net';

export async function typedUse(dir: string): Promise<ProcessSummary> {
  const q: Queue = Queue.init(dir, { appendOnly: false });
  const opened: Queue = Queue.open(dir, { decoder: 'zcat' });
  const packet: Readable = preparePacket({
    seqfile: `${dir}.seq`,
    params: ['a', Buffer.from('b')],
    env: { K: 'v' },
    payload: { path: '/etc/hostname' },
  });
  const filename: string = await q.write(packet);
  const read: ReadPacket = await readPacket({ path: `${dir}/jobs/${filename}` });
  const seq: bigint = read.seq;
  const meta: PacketMetadata = read;
  const { header, length }: { header: typeof meta.header; length: number } = decodeHeader(encodeHeader(meta.header));
  void header;
  void length;
  for await (const job of opened) {
    const j: QueuedJob = job;
    const payload: Readable = await j.payload();
    payload.destroy();
  }
  const next: bigint = q.getNext();
  q.setNext(next + seq);
  const info = await q.info(1n);
  const vars: Record<string, string> = info.variables;
  void vars;
  const stop = new AbortController();
  await q.process(['md5sum'], { onError: 'leave', maxJobs: 5, signal: stop.signal, watch: { pollInterval: 0.5 } });
  try {
    return await q.process(
      async (job: JobContext) => {
        const first: Uint8Array[] = await job.payload.toArray();
        if (job.kind === 'Command' && job.params.length > first.length) throw new Error('odd');
      },
      { onError: 'retry', orderBy: 'timestamp', onEvent: (e) => void (e.type === 'end' && e.ok) },
    );
  } catch (err) {
    if (err instanceof LockedError) throw err;
    const code: FsplErrorCode | undefined = err instanceof FsplError ? err.code : undefined;
    throw new Error(String(code));
  }
}

// @ts-expect-error: sequence numbers are bigints, never numbers
Queue.open('/q').setNext(5);

// The operator tooling, from filespooler/net, on the main entry's Net.
export function plan(net: Net): SimulationReport {
  return simulate(net.model, { tokens: 10, workers: 2 });
}
export const metrics: typeof netMetricsText = netMetricsText;
