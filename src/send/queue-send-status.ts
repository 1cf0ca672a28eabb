/**
 * `fspl queue-send --status`: what an outbox holds and how its sender goes, read without taking
 * anything: the packets waiting (from the outbox's files and nextseq), whether a sender runs now,
 * and what the sender's state file (OUTBOX/sender.json, sender-state.ts) says: where it sends,
 * since when it fails and why, what stopped it, the last packet sent.
 */
import path from 'node:path';
import { Queue } from '../queue/queue.js';
import { isLocked } from '../sys/lock.js';
import { SeqFile } from '../sys/seqfile.js';
import type { QueueSendState } from './send-queue.js';
import { readSenderState } from './sender-state.js';

export interface QueueSendStatus {
  outbox: string;
  /** The packets not yet acknowledged: how many, and their lowest and highest numbers. */
  waiting: { count: number; lowest?: bigint; highest?: bigint };
  /** The outbox's next number (the first not yet acknowledged); undefined if nextseq can't be read. */
  next?: bigint;
  /**
   * Packets numbered below `next`: the last acknowledged group's files not yet deleted (the next
   * sender deletes them), or packets put there by hand, which are never sent (already past).
   */
  below: number;
  /**
   * `running`: the sender of the state file is alive and the outbox's lock is held; `locked`: the
   * lock is held, by another program (queue-process, or a sender that wrote no state yet);
   * `idle`: nothing holds the outbox.
   */
  sender: 'running' | 'locked' | 'idle';
  /** The state file of the sender running now, or of the last one (absent: none ever ran). */
  state?: QueueSendState;
}

/** Whether a process with this pid exists (EPERM: it does, another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** An outbox's status; a missing outbox or one that is no queue is a QueueError (one line). */
export async function queueSendStatus(outbox: string): Promise<QueueSendStatus> {
  const queue = new Queue(outbox);
  queue.assertExists();
  const next = SeqFile.peek(queue.seqfilePath);
  let count = 0;
  let lowest: bigint | undefined;
  let highest: bigint | undefined;
  let below = 0;
  for (const e of await queue.scan()) {
    const s = e.header.seq;
    if (next !== undefined && s < next) {
      below++;
      continue;
    }
    count++;
    if (lowest === undefined || s < lowest) lowest = s;
    if (highest === undefined || s > highest) highest = s;
  }
  const state = readSenderState<{ to: string }>(outbox);
  // The lock, not only the pid: a pid may be taken again by another process once the sender is gone.
  const locked = isLocked(path.join(outbox, 'nextseq.lock'));
  const sender = !locked ? 'idle' : state && alive(state.pid) ? 'running' : 'locked';
  return { outbox, waiting: { count, lowest, highest }, next, below, sender, state };
}
