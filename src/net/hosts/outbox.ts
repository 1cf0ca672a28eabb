/**
 * Delivery over ssh: the outbox of a remote place (a local Filespooler queue, written by the
 * runner's ordinary commits, see hosts.ts) is emptied in sequence order into the place's jobs/ on
 * its host, through the user's own ssh. No protocol of our own on the network: the remote side is
 * a POSIX shell script run by `ssh HOST sh -c SCRIPT` that needs only sh, head, wc, mv, sync and
 * flock (util-linux); it does not even need fspl.
 *
 * Exactly once, across cut connections and lost exit statuses:
 * - Each packet keeps the name its outbox file got when it was committed (fspl-UUID.fspl), and is
 *   received under a hidden temporary name (.fspl-in-UUID.part, which no reader looks at), its
 *   length checked, fsynced, and only then renamed to fspl-UUID.fspl. A packet cut half-way is
 *   never a job; it is sent again, whole.
 * - The outbox numbers the place (its sendseq is the place's numbering: one sender per place,
 *   which hosts.ts checks) and sends in order, so the receiver keeps one number per place,
 *   DIR/recvseq: the number after the last packet received. It is stored (fsynced) before the
 *   rename, under DIR/recv.lock. A packet numbered below it has been received already: its bytes
 *   are read and dropped, and if its temporary file is still there (the receiver died between
 *   storing the number and the rename) the rename is done now. So a packet sent twice, because
 *   its acknowledgement was lost, is one token, whether or not the place consumed it meanwhile.
 * - The sender removes a packet from its outbox only once the receiver acknowledged it
 *   (`ok ID`/`dup ID`): it moves the outbox's nextseq past it, then deletes the file (as
 *   queue-process does), so after a crash here a packet is at worst sent again, and then dropped.
 *
 * Speed: one ssh connection carries every packet waiting (up to BATCH_PACKETS), one frame each
 * (`ID SEQ LENGTH` line, then the bytes), acknowledged one by one while the next are sent.
 *
 * Outbox tokens are sealed packets (length and CRC-32 in the header, place.ts): where the host's
 * `fspl:` names an fspl of ours, the receiver checks the seal too, not only the framed length. It
 * first makes sure that this fspl is there, runs and checks seals (a verifier that silently does
 * nothing would let damaged packets in); when not, it takes nothing, and the sender stops that
 * outbox (VerifierProblem) instead of retrying forever.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { LockedError, NetError } from '../../errors.js';
import { silentLogger, type Logger } from '../../log.js';
import { Queue, type JobEntry } from '../../queue.js';
import type { SeqFile } from '../../seqfile.js';
import { JobsWatcher } from '../../watch.js';
import type { HostConfig, RemotePlace } from './hosts.js';
import { sealOf } from '../../packet/index.js';
import { makeHeader, packetBytes } from '../../prepare.js';

/**
 * The packets the receiver tries its verifier on, as printf escapes (octal, so no byte is special
 * to the shell or to printf): a sealed packet, and the same packet with one payload byte changed.
 * The verifier must take the first and refuse the second; a program that takes both (the
 * reference fspl, which ignores seals, or anything that exits 0) would let damaged packets in.
 */
function probePackets(): { good: string; bad: string } {
  const payload = Buffer.from('fspl seal probe\n');
  const header = { ...makeHeader({ seq: 1n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }), seal: sealOf(payload) };
  const damaged = Buffer.from(payload);
  damaged[0] ^= 1;
  const octal = (b: Buffer) => [...b].map((x) => `\\${x.toString(8).padStart(3, '0')}`).join('');
  return { good: octal(packetBytes(header, payload)), bad: octal(packetBytes(header, damaged)) };
}
const { good: PROBE_GOOD, bad: PROBE_BAD } = probePackets();

/**
 * The receiving side. $1 is the place's directory, $2 the fspl that checks seals (or empty).
 * Reads frames from stdin; writes `ready R` once it holds the place's receive lock (and, with $2,
 * its verifier passed the probe), then `ok ID` or `dup ID` per packet. Exit status non-zero on
 * any problem (no queue there, a packet cut short, a bad frame, a failed write); when the
 * verifier is missing or unusable, it says so first on stdout (`fspl-unusable KIND DETAIL`) and
 * exits 7.
 * No single quote may appear in it (it travels inside one).
 */
export const RECEIVE_SCRIPT = `
d=$1; j="$d/jobs"
[ -d "$j" ] || { echo "fspl receive: no queue at $d on $(hostname) (run fspl net init --host there)" >&2; exit 3; }
exec 9>>"$d/recv.lock" || exit 3
flock 9 || { echo "fspl receive: cannot lock $d/recv.lock (flock from util-linux is needed)" >&2; exit 3; }
F=$2
unusable() {
  echo "fspl-unusable $1 $2"
  echo "fspl receive: fspl at $F on $(hostname): $3" >&2
  exit 7
}
# With fspl: set, no packet is taken unverified: the verifier must be there, run, and check seals
# (an intact probe packet passes, the same packet with its payload changed fails), or the
# receiver refuses with the verifier's own reason, never calling a packet damaged.
probe() {
  command -v "$F" >/dev/null 2>&1 || unusable not-found "" "not found"
  e=$(printf "${PROBE_GOOD}" | "$F" stdin-payload 2>&1 >/dev/null) || {
    c=$?; e=$(printf "%s\n" "$e" | head -n 1); [ -n "$e" ] || e="exited with status $c"
    unusable cannot-run "$e" "cannot run: $e"
  }
  if printf "${PROBE_BAD}" | "$F" stdin-payload >/dev/null 2>&1; then
    unusable no-seal-check "" "does not check seals (the reference fspl? fspl: must name this implementation)"
  fi
}
[ -z "$F" ] || probe
verify() {
  s=$(wc -c <"$1") && [ "$s" -eq "$2" ] || return 1
  # A sealed packet (the outboxes write them so) is also checked against its CRC-32.
  [ -z "$F" ] || "$F" stdin-payload <"$1" >/dev/null 2>&1 && return 0
  # Refused: damaged on the way, unless the verifier itself stopped working (then probe exits).
  rm -f "$1"; probe; return 1
}
r=1
if [ -s "$d/recvseq" ]; then read -r r <"$d/recvseq"; fi
echo "ready $r"
while read -r id seq n; do
  case "$id:$seq:$n" in *[!A-Za-z0-9:-]*|:*|*::*|*:) echo "fspl receive: bad frame" >&2; exit 4;; esac
  t="$j/.fspl-in-$id.part"; f="$j/fspl-$id.fspl"
  if [ "$seq" -lt "$r" ]; then
    head -c "$n" >/dev/null
    if [ -f "$t" ]; then mv -f "$t" "$f" && sync "$j" || exit 5; fi
    echo "dup $id"
  else
    head -c "$n" >"$t" || exit 5
    verify "$t" "$n" || { rm -f "$t"; echo "fspl receive: packet $id cut short or damaged" >&2; exit 6; }
    # Durable in this order (sync FILE/DIR fsyncs it), so that a power cut here at any instant
    # neither loses an acknowledged packet nor makes one token of it twice: the packet under its
    # hidden name; then recvseq past it (a resend is now a dup, which finishes the rename); then
    # the packet under its job name, before the ok that lets the sender delete its copy.
    sync "$t" "$j" || exit 5
    r=$((seq + 1))
    echo "$r" >"$d/recvseq.tmp" && sync "$d/recvseq.tmp" && mv -f "$d/recvseq.tmp" "$d/recvseq" && sync "$d" || exit 5
    mv -f "$t" "$f" && sync "$j" || exit 5
    echo "ok $id"
  fi
done
`;

/** Quote a word for the remote shell (ssh joins its arguments into one command line). */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The remote command line that receives packets into the place at `remoteDir`; `fspl`, when
 * given and found there, checks each packet's seal.
 */
export function receiveCommand(remoteDir: string, fspl = ''): string {
  return `sh -c ${shellQuote(RECEIVE_SCRIPT)} fspl-receive ${shellQuote(remoteDir)} ${shellQuote(fspl)}`;
}

export interface OutgoingPacket {
  /** The packet file (an outbox job). */
  path: string;
  /** Its stable identity: the UUID of its fspl-UUID.fspl name, kept on the remote side. */
  id: string;
  seq: bigint;
}

/**
 * Why the fspl named by a host's `fspl:` can't check seals there. Not a passing problem of the
 * network: sending again does not help until someone fixes the host or the net file.
 */
export type VerifierProblem = { kind: 'not-found' } | { kind: 'cannot-run'; detail: string } | { kind: 'no-seal-check' };

/** The one line an operator reads: "fspl at PATH on HOST: ...". */
export function describeVerifierProblem(p: VerifierProblem, fspl: string, host: string): string {
  const where = `fspl at ${fspl} on ${host}`;
  switch (p.kind) {
    case 'not-found':
      return `${where}: not found`;
    case 'cannot-run':
      return `${where}: cannot run: ${p.detail}`;
    case 'no-seal-check':
      return `${where}: does not check seals (the reference fspl? fspl: must name this implementation's fspl)`;
  }
}

export interface SendResult {
  /** Packets acknowledged, in order (a prefix of those given). */
  acked: number;
  /** Of those, how many the receiver already had. */
  duplicates: number;
  /** The receiver's number after the packets it holds, as it said on connecting. */
  remoteNext?: bigint;
  /** Why the connection ended early (or, for a probe with no packets, failed). */
  error?: string;
  /** The seal verifier (`fspl:`) is unusable on the remote host: nothing was or will be taken. */
  verifier?: VerifierProblem;
}

export interface SendOptions {
  /** fspl on the remote host, to check the seal of each packet there (see RECEIVE_SCRIPT). */
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

const ID_RE = /^[A-Za-z0-9-]+$/;
const VERIFIER_KINDS = ['not-found', 'cannot-run', 'no-seal-check'] as const;

/** The receiver's `fspl-unusable KIND DETAIL` line, if that is what the line is. */
function parseUnusable(line: string): VerifierProblem | undefined {
  const m = /^fspl-unusable (\S+) ?(.*)$/.exec(line);
  const kind = VERIFIER_KINDS.find((k) => k === m?.[1]);
  if (!m || !kind) return undefined;
  return kind === 'cannot-run' ? { kind, detail: m[2]! } : { kind };
}

/** Until the stream takes more, or is gone (its listeners removed either way). */
function drained(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}

/** The identity of an outbox file: fspl-ID.fspl. */
export function packetId(filename: string): string {
  const id = filename.replace(/^fspl-/, '').replace(/\.fspl$/, '');
  if (!ID_RE.test(id)) throw new NetError(`Outbox file ${filename} has no usable name`);
  return id;
}

/**
 * Send packets, in the order given, to the place at `remoteDir` through `ssh` (the ssh command and
 * destination; the remote command is appended). Never throws for a failed connection: the result
 * says how far it went. With no packets it is a probe: connect, find the queue, take its lock and
 * try the verifier, as a delivery would (`net check --host`).
 */
export async function sendPackets(ssh: string[], remoteDir: string, packets: OutgoingPacket[], opts: SendOptions = {}): Promise<SendResult> {
  const [cmd, ...args] = ssh;
  const child = spawn(cmd!, [...args, receiveCommand(remoteDir, opts.fspl)], { stdio: ['pipe', 'pipe', 'pipe'] });
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
    const stdin = child.stdin!;
    for (const p of packets) {
      if (stopWriting || stdin.destroyed) break;
      try {
        const size = fs.statSync(p.path).size; // outbox files never change once written
        if (!stdin.write(`${p.id} ${p.seq} ${size}\n`)) await drained(stdin);
        // Exactly `size` bytes: the length was promised in the frame line. The stream owns its
        // descriptor: breaking out destroys it, and it closes the descriptor only once no read is
        // in flight (closing it ourselves could let a pending read land on a reused number).
        if (size > 0) {
          for await (const chunk of fs.createReadStream(p.path, { start: 0, end: size - 1, highWaterMark: 256 * 1024 })) {
            if (stopWriting || stdin.destroyed) break;
            if (!stdin.write(chunk)) await drained(stdin);
          }
        }
      } catch {
        break; // the connection went (or the file): the reader or exit status has the story
      }
    }
    stdin.end();
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
          : `${cmd} ${exit.signal ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-2).join(' / ')}` : ''}`);
    result.error = why;
  }
  return result;
}

/** Send one packet file (it keeps its name, fspl-ID.fspl, on the remote side). */
export async function sendPacket(ssh: string[], remoteDir: string, packetFile: string, seq: bigint): Promise<SendResult> {
  return sendPackets(ssh, remoteDir, [{ path: packetFile, id: packetId(path.basename(packetFile)), seq }]);
}

/** What `status` shows about an outbox's sender (STATE/outbox/PLACE/sender.json). */
export interface SenderState {
  host: string;
  remoteDir: string;
  pid: number;
  updatedAt: number;
  /** Tokens sent (acknowledged) by this run. */
  sent: number;
  duplicates: number;
  lastSentAt?: number;
  /** Set while deliveries fail. */
  failing?: { since: number; attempts: number; error: string };
  /**
   * Set when this sender gave up until the run is restarted: the host's `fspl:` can't check seals
   * (VerifierProblem). The tokens stay in the outbox.
   */
  stopped?: { at: number; error: string };
}

export function senderStatePath(outbox: string): string {
  return path.join(outbox, 'sender.json');
}

export function readSenderState(outbox: string): SenderState | undefined {
  try {
    return JSON.parse(fs.readFileSync(senderStatePath(outbox), 'utf8')) as SenderState;
  } catch {
    return undefined;
  }
}

/** The number the outbox gives next (its sendseq): the remote place's numbering. */
function outboxNext(outbox: string): bigint {
  try {
    return BigInt(fs.readFileSync(path.join(outbox, 'sendseq'), 'utf8').trim() || '1');
  } catch {
    return 1n;
  }
}

/** Why nothing may be sent, when the remote place has numbers this outbox never gave. */
function aheadOfOutbox(place: string, host: string, remoteNext: bigint, mine: bigint): string | undefined {
  if (remoteNext <= mine) return undefined;
  return `the place ${place} on ${host} has received numbers up to ${remoteNext - 1n}, but this outbox has only given numbers below ${mine}: was this host's state directory removed? Nothing is sent (it would be dropped as already received)`;
}

/** What `net check --host` found out about one outbox's way to its place. */
export interface OutboxProbe {
  place: string;
  host: string;
  remoteDir: string;
  /** The verifier tried there (the host's `fspl:`), if any. */
  fspl?: string;
  /** Why a delivery would fail now; undefined when it would work. */
  error?: string;
  verifier?: VerifierProblem;
}

/**
 * Try the way from an outbox to its place as the sender would (one connection, no packets): ssh,
 * the queue there, its receive lock, the verifier, and the numbering.
 */
export async function probeOutbox(opts: { place: string; outbox: string; remote: RemotePlace; host: HostConfig; signal?: AbortSignal }): Promise<OutboxProbe> {
  const r = await sendPackets(opts.host.ssh, opts.remote.dir, [], {
    fspl: opts.host.fspl,
    host: opts.remote.host,
    signal: opts.signal,
    onReady: (remoteNext) => aheadOfOutbox(opts.place, opts.remote.host, remoteNext, outboxNext(opts.outbox)),
  });
  return { place: opts.place, host: opts.remote.host, remoteDir: opts.remote.dir, fspl: opts.host.fspl, error: r.error, verifier: r.verifier };
}

const BATCH_PACKETS = 1000;
const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 10_000;

export interface OutboxSenderOptions {
  place: string;
  /** The outbox directory (a queue). */
  outbox: string;
  remote: RemotePlace;
  host: HostConfig;
  logger?: Logger;
  pollInterval?: number;
}

/**
 * Empties one outbox into its remote place for as long as the run lasts, retrying with back-off
 * while the host can't be reached (the outbox grows meanwhile; status shows it).
 */
export class OutboxSender {
  private readonly opts: OutboxSenderOptions;
  private readonly queue: Queue;
  private readonly log: Logger;
  private entries = new Map<string, JobEntry>();
  private consumer?: SeqFile;
  private sendseqNext?: () => bigint;
  private state: SenderState;
  private wake?: () => void;
  private dirty = true;

  constructor(opts: OutboxSenderOptions) {
    this.opts = opts;
    this.queue = new Queue(opts.outbox);
    this.log = opts.logger ?? silentLogger;
    this.state = { host: opts.remote.host, remoteDir: opts.remote.dir, pid: process.pid, updatedAt: Date.now(), sent: 0, duplicates: 0 };
  }

  /** Tokens waiting in the outbox (as last seen). */
  get waiting(): number {
    return this.entries.size;
  }

  get failing(): SenderState['failing'] {
    return this.state.failing;
  }

  get stopped(): SenderState['stopped'] {
    return this.state.stopped;
  }

  private poke = () => {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  private saveState(): void {
    this.state.updatedAt = Date.now();
    const file = senderStatePath(this.opts.outbox);
    try {
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(this.state));
      fs.renameSync(`${file}.tmp`, file);
    } catch (err) {
      this.log.debug('net', () => `Cannot write ${file}: ${(err as Error).message}`);
    }
  }

  /** The packets to send now: consecutive numbers from the outbox's nextseq. */
  private async due(): Promise<OutgoingPacket[]> {
    this.entries = await this.queue.rescan(this.entries);
    const next = this.consumer!.read();
    const bySeq = new Map<bigint, JobEntry>();
    for (const e of this.entries.values()) {
      if (e.header.seq < next) {
        // Acknowledged, but this process stopped before deleting it.
        fs.rmSync(this.queue.jobPath(e.filename), { force: true });
        this.entries.delete(e.filename);
      } else bySeq.set(e.header.seq, e);
    }
    const out: OutgoingPacket[] = [];
    for (let s = next; out.length < BATCH_PACKETS; s++) {
      const e = bySeq.get(s);
      if (!e) break;
      out.push({ path: this.queue.jobPath(e.filename), id: packetId(e.filename), seq: s });
    }
    return out;
  }

  /** Send until the signal aborts; with `untilEmpty`, return once the outbox is empty or a send fails. */
  async run(signal: AbortSignal, options: { untilEmpty?: boolean } = {}): Promise<void> {
    fs.mkdirSync(this.queue.jobsDir, { recursive: true });
    try {
      this.consumer = this.queue.lockSeqfile();
    } catch (err) {
      if (err instanceof LockedError) throw new NetError(`The outbox ${this.opts.outbox} is being sent by another program (its nextseq.lock is held)`);
      throw err;
    }
    this.sendseqNext = () => outboxNext(this.opts.outbox);
    const watcher = new JobsWatcher(this.queue.jobsDir, { pollInterval: this.opts.pollInterval, safetyInterval: 5, logger: this.log });
    void (async () => {
      while (await watcher.wait(signal)) this.poke();
    })();
    const onAbort = () => this.poke();
    signal.addEventListener('abort', onAbort, { once: true });
    let attempts = 0;
    this.state.stopped = undefined; // each run tries the host's fspl again
    try {
      while (!signal.aborted) {
        this.dirty = false;
        const batch = await this.due();
        if (batch.length === 0) {
          if (options.untilEmpty) return;
          await this.sleep();
          continue;
        }
        const r = await sendPackets(this.opts.host.ssh, this.opts.remote.dir, batch, {
          fspl: this.opts.host.fspl,
          host: this.opts.remote.host,
          signal,
          onReady: (remoteNext) => aheadOfOutbox(this.opts.place, this.opts.remote.host, remoteNext, this.sendseqNext!()),
          onAck: (p, dup) => {
            // As queue-process: the number first, then the file.
            this.consumer!.write(p.seq + 1n);
            fs.rmSync(p.path, { force: true });
            this.entries.delete(path.basename(p.path));
            this.state.sent++;
            if (dup) this.state.duplicates++;
            this.state.lastSentAt = Date.now();
          },
        });
        if (signal.aborted) break;
        if (r.error === undefined) {
          if (this.state.failing) this.log.info('net', `Outbox ${this.opts.place}: host ${this.opts.remote.host} reachable again`);
          this.state.failing = undefined;
          attempts = 0;
          this.saveState();
          continue;
        }
        if (r.verifier) {
          // Retrying can't help: the tokens wait here, whole, until the host's fspl is fixed.
          this.state.failing = undefined;
          this.state.stopped = { at: Date.now(), error: r.error ?? 'the remote fspl cannot check seals' };
          this.saveState();
          this.log.error('net', `Outbox ${this.opts.place}: stopped sending to ${this.opts.remote.host}:${this.opts.remote.dir}: ${this.state.stopped.error}; ${this.entries.size} token(s) stay in ${this.opts.outbox}. Fix the fspl: of host ${this.opts.remote.host} (see fspl net check --host), then restart fspl net run`);
          return;
        }
        attempts++;
        this.state.failing = { since: this.state.failing?.since ?? Date.now(), attempts, error: r.error };
        this.saveState();
        if (attempts === 1 || attempts % 10 === 0) this.log.warn('net', `Outbox ${this.opts.place}: cannot deliver to ${this.opts.remote.host}:${this.opts.remote.dir} (${r.error}); ${this.entries.size} token(s) wait, retrying`);
        if (options.untilEmpty) return;
        await backOff(Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(attempts - 1, 10)), signal);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      watcher.close();
      this.saveState();
      this.consumer?.release();
      this.consumer = undefined;
    }
  }

  /** Until new tokens arrive (or the run stops). */
  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      if (this.dirty) return resolve();
      this.wake = resolve;
    });
  }
}

/** Wait before trying a host again; new tokens don't cut it short, stopping does. */
function backOff(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
