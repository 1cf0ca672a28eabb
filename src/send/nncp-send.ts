/**
 * The NNCP way out of an outbox: `nncp-exec [-cfg CFG] NODE HANDLE ARGS...` with the packets'
 * frames (frames.ts) on its stdin; the far node's exec handle, `fspl queue-receive` or `fspl net
 * receive` (receive.ts), stores each packet once, in whatever order NNCP delivers and however often.
 *
 * A config given (`cfg`) is given to the tools as -cfg and as $NNCPCFG: NNCP's tools take a
 * non-empty $NNCPCFG over -cfg (NNCP 8.8: `NNCPCFG=a.hjson nncp-toss -cfg b.hjson` runs as node a),
 * so an NNCPCFG left in the environment would otherwise send as another node.
 *
 * An exit status of 0 is the acknowledgement: the packets are in NNCP's hands (durably: nncp-exec
 * fsyncs its spool before it exits). They are not yet known to have arrived; `nncp-stat` shows
 * what still waits in the spool here.
 */

import fs from 'node:fs';
import { runTool } from '../sys/tool.js';
import type { Delivery, DeliveryHooks, OutgoingPacket, SendResult } from './delivery.js';
import { writeFrames } from './frames.js';

export interface NncpWay {
  /** The node to send to, as this node's config names it. */
  node: string;
  /** The exec handle on that node (in its config, under this node's entry). */
  handle: string;
  /** This node's NNCP config (default: NNCP's own, $NNCPCFG or /etc/nncp.hjson). */
  cfg?: string;
  /** Words given to the handle after its own (a net's place name). */
  args?: readonly string[];
}

/**
 * Bytes handed to one nncp-exec: a batch above it goes as several NNCP packets (nncp-exec holds
 * its input in memory while it encrypts it).
 */
const MAX_BYTES = 64 * 1024 * 1024;

/** The way to `way.node` through NNCP. */
export function nncpDelivery(way: NncpWay): Delivery {
  return {
    kind: 'nncp',
    acknowledges: 'handed',
    send: (packets, hooks = {}) =>
      packets.length === 0 ? probeNncp(way, hooks.signal) : handToNncp(way, packets, hooks),
  };
}

/** `-cfg CFG` when the way names a config. */
function cfgArgs(way: Pick<NncpWay, 'cfg'>): string[] {
  return way.cfg === undefined ? [] : ['-cfg', way.cfg];
}

/** The first packets of a batch, up to MAX_BYTES (at least one). */
function prefix(packets: readonly OutgoingPacket[]): OutgoingPacket[] {
  let bytes = 0;
  const out: OutgoingPacket[] = [];
  for (const p of packets) {
    bytes += fs.statSync(p.path, { throwIfNoEntry: false })?.size ?? 0;
    if (out.length > 0 && bytes > MAX_BYTES) break;
    out.push(p);
  }
  return out;
}

/** Hand packets to NNCP (one nncp-exec); all of them are acknowledged when it exits 0. */
async function handToNncp(way: NncpWay, packets: readonly OutgoingPacket[], hooks: DeliveryHooks): Promise<SendResult> {
  const batch = prefix(packets);
  const args = [...cfgArgs(way), '-quiet', '-noprogress', way.node, way.handle, ...(way.args ?? [])];
  let whole = 0;
  const r = await run('nncp-exec', args, way, hooks.signal, async (stdin) => {
    whole = await writeFrames(stdin, batch, () => hooks.signal?.aborted === true);
  });
  if (r.error !== undefined) return { acked: 0, duplicates: 0, error: r.error };
  // One NNCP packet: in the spool with every frame written whole (nncp-exec takes the end of its
  // input for the end of the data), and only those are acknowledged. A frame cut short (a file
  // that went) is dropped by the receiver and sent again from here.
  for (const p of batch.slice(0, whole)) hooks.onAck?.(p, false);
  if (whole < batch.length)
    return { acked: whole, duplicates: 0, error: `could not read packet ${batch[whole]!.id} of the outbox` };
  return { acked: whole, duplicates: 0 };
}

/** Without packets: is NNCP there, and does this node's config know the node? */
async function probeNncp(way: NncpWay, signal: AbortSignal | undefined): Promise<SendResult> {
  const r = await run('nncp-stat', [...cfgArgs(way), '-node', way.node], way, signal);
  return { acked: 0, duplicates: 0, ...(r.error === undefined ? {} : { error: r.error }) };
}

/**
 * Run an NNCP tool, feeding its stdin with `feed` (or nothing); with the way's config in
 * $NNCPCFG too, which NNCP's tools prefer to -cfg. Resolves with the reason it failed, in one
 * line, or with no error.
 */
async function run(
  tool: string,
  args: string[],
  way: Pick<NncpWay, 'cfg'>,
  signal: AbortSignal | undefined,
  feed?: (stdin: NodeJS.WritableStream & { destroyed: boolean }) => Promise<void>,
): Promise<{ error?: string; stdout: string }> {
  const env = way.cfg === undefined ? undefined : { ...process.env, NNCPCFG: way.cfg };
  const r = await runTool(tool, args, { signal, feed, env });
  const failed = (error: string) => ({ stdout: r.stdout, error });
  if (r.startError)
    return failed(
      r.startError.code === 'ENOENT'
        ? `${tool} not found (install NNCP: apt-get install nncp)`
        : `cannot run ${tool}: ${r.startError.message}`,
    );
  if (signal?.aborted) return failed('stopped');
  if (r.code === 0) return { stdout: r.stdout };
  const said = lastLine(r.stderr);
  return failed(
    `${tool} ${r.signal ? `was killed by ${r.signal}` : `exited with status ${r.code}`}${said ? `: ${said}` : ''}`,
  );
}

/** What this node's NNCP spool holds for a node, not yet moved there (nncp-stat). */
export type SpoolCount = { packets: number } | { error: string };

export async function nncpSpool(way: Pick<NncpWay, 'node' | 'cfg'>, signal?: AbortSignal): Promise<SpoolCount> {
  const r = await run('nncp-stat', [...cfgArgs(way), '-node', way.node], way, signal);
  if (r.error !== undefined) return { error: r.error };
  // `nice:   P | Rx:  0 B,   0 pkts | Tx:  495 B,   1 pkts`, a line per niceness level.
  let packets = 0;
  for (const m of r.stdout.matchAll(/Tx:[^,|]*,\s*(\d+) pkts/g)) packets += Number(m[1]);
  return { packets };
}

/** NNCP's last word on stderr, without its `main.go:80: ` prefix. */
function lastLine(text: string): string {
  const line = text.trim().split('\n').slice(-1)[0] ?? '';
  return line.replace(/^\S+\.go:\d+: /, '').trim();
}
