/**
 * The ssh client of a delivery: sends an outbox's packets, in order, to the receiver
 * (receive-script.ts) on the place's host, through the user's own ssh: one connection for a batch,
 * one frame a packet (`ID SEQ LENGTH` line, then the bytes), acknowledged while the next are sent.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { spawnTalking } from '../sys/exec.js';
import type { Delivery, DeliveryHooks, OutgoingPacket, SendResult } from './delivery.js';
import { packetId, writeFrames } from './frames.js';

export { packetId } from './frames.js';

import { describeVerifierProblem, parseUnusable, receiveCommand } from './receive-script.js';

export type { OutgoingPacket, SendResult } from './delivery.js';

export interface SendOptions {
  /** fspl on the remote host, to check the seal of each packet there (see receiveScript). */
  fspl?: string;
  /** The remote host's name in messages (default: the ssh destination, ssh's last word). */
  host?: string;
  /** Called for each packet acknowledged, in order, before the next acknowledgement is read. */
  onAck?: (p: OutgoingPacket, duplicate: boolean) => void;
  /** Checked once the receiver says `ready R`: return an error to send nothing. */
  onReady?: (remoteNext: bigint) => string | undefined;
  signal?: AbortSignal;
  /** The ssh child, once spawned (tests cut it). */
  onSpawn?: (child: ChildProcess) => void;
}

/**
 * Send packets, in the order given, to the place at `remoteDir` through `ssh` (the ssh command and
 * destination; the remote command is appended). Never throws for a failed connection: the result
 * says how far it went. With no packets it is a probe: connect, find the queue, take its lock and
 * try the verifier, as a delivery would (`net check --host`).
 *
 * One function on purpose: the writer of frames and the reader of
 * acknowledgements run at once on the same child and share its state (ready, stopWriting,
 * refused, the packet acknowledged next); the finally block that ends both must see all of it.
 */
export async function sendPackets(
  ssh: string[],
  remoteDir: string,
  packets: OutgoingPacket[],
  opts: SendOptions = {},
): Promise<SendResult> {
  const [cmd, ...args] = ssh;
  const child = spawnTalking(cmd!, [...args, receiveCommand(remoteDir, opts.fspl)], ['pipe', 'pipe', 'pipe']);
  opts.onSpawn?.(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-2048);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  const onAbort = () => child.kill('SIGTERM');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  child.stdin!.on('error', () => {}); // EPIPE when the far side goes: the exit status says why
  const result: SendResult = { acked: 0, duplicates: 0 };
  let refused: string | undefined;
  // Writing: frames one after the other, with back-pressure; stops when the reader gives up.
  let stopWriting = false;
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const writer = (async () => {
    await isReady;
    await writeFrames(child.stdin!, packets, () => stopWriting);
    child.stdin!.end();
  })();
  const lines = readline.createInterface({ input: child.stdout! });
  let next = 0;
  try {
    for await (const line of lines) {
      const unusable = parseUnusable(line);
      if (unusable) {
        result.verifier = unusable;
        refused = describeVerifierProblem(unusable, opts.fspl ?? '', opts.host ?? ssh[ssh.length - 1]!);
        break;
      }
      const m = /^(ready|ok|dup) (\S+)$/.exec(line);
      if (!m) {
        refused = `unexpected answer from the receiver: ${JSON.stringify(line.slice(0, 200))}`;
        break;
      }
      if (m[1] === 'ready') {
        result.remoteNext = BigInt(m[2]!);
        refused = opts.onReady?.(result.remoteNext);
        if (refused) break;
        ready();
        continue;
      }
      const p = packets[next];
      if (!p || p.id !== m[2]) {
        refused = `the receiver acknowledged ${m[2]}, expected ${p?.id ?? 'nothing'}`;
        break;
      }
      next++;
      result.acked++;
      if (m[1] === 'dup') result.duplicates++;
      opts.onAck?.(p, m[1] === 'dup');
      if (next === packets.length) break;
    }
  } finally {
    stopWriting = true;
    ready();
    if (refused || result.acked < packets.length) child.kill('SIGTERM');
    else child.stdin!.end();
    lines.close();
  }
  await writer;
  const exit = await exited;
  opts.signal?.removeEventListener('abort', onAbort);
  // No `ready`: the receiver never started taking packets (a probe with none to send has only this).
  if (refused !== undefined || result.acked < packets.length || result.remoteNext === undefined) {
    const why =
      refused ??
      (exit.error
        ? `cannot run ${cmd}: ${exit.error.message}`
        : opts.signal?.aborted
          ? 'stopped'
          : `${cmd} ${exit.signal ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`}` +
            (stderr.trim() ? `: ${stderr.trim().split('\n').slice(-2).join(' / ')}` : ''));
    result.error = why;
  }
  return result;
}

/** Send one packet file (it keeps its name, fspl-ID.fspl, on the remote side). */
export async function sendPacket(
  ssh: string[],
  remoteDir: string,
  packetFile: string,
  seq: bigint,
): Promise<SendResult> {
  return sendPackets(ssh, remoteDir, [{ path: packetFile, id: packetId(path.basename(packetFile)), seq }]);
}

/** The ssh way to a queue or place: `ssh` is the command and its destination (see sendPackets). */
export function sshDelivery(
  ssh: string[],
  remoteDir: string,
  opts: { fspl?: string; host?: string; onSpawn?: SendOptions['onSpawn'] } = {},
): Delivery {
  return {
    kind: 'ssh',
    acknowledges: 'stored',
    send: (packets: OutgoingPacket[], hooks: DeliveryHooks = {}) =>
      sendPackets(ssh, remoteDir, packets, { ...opts, ...hooks }),
  };
}
