/**
 * A firing's input tokens as its command, its function or its move reads them.
 *
 * A token of a signed place (place/signatures.ts) was judged when a scan first indexed it
 * (refuse.ts), but whoever may write its place's jobs/ (a transition's user, a sync tool) may
 * have replaced its file under the same name since. So the firing opens it again, once (not
 * through a link, one regular file with one name: Queue.openPlainJob), judges that descriptor,
 * header and payload, as queue-process judges a job before it runs (sign/judge.ts), and every
 * read of the token's payload for this firing goes through what was checked: the file itself
 * when only we can write it, else a nameless spool of ours, copied as it was hashed
 * (sign/payload-digest.ts). A token refused there ends the firing before anything runs: its
 * outcome carries the refusal, and the run sets the token aside as a scan does (apply-outcome.ts).
 *
 * Tokens of the other places are read by name: no extra open, no hash.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import type { PacketHeader } from '../../packet/index.js';
import { openPayloadAndHeaderSync } from '../../queue/job-headers.js';
import type { Queue } from '../../queue/queue.js';
import type { AllowedSigners } from '../../sign/allowed-signers.js';
import { judgeSignedFile } from '../../sign/judge.js';
import { copy } from '../../sys/copy.js';
import { closeQuietly, readSomeSync, writeAllSync } from '../../sys/io.js';
import { createFresh, type FileOwner } from '../../sys/untrusted.js';
import type { FiringInput } from '../model/model.js';
import { copyPayloads, extractPayload, payloadOf, payloadStream, readSmallToken } from '../place/payload.js';
import { rememberHeader, type Token, tokenKey, useCheckedHeader } from '../place/token.js';

/** What a firing needs of a signed place to judge its tokens: where they are, and who may sign them. */
export interface SignedInput {
  readonly queue: Queue;
  readonly signers: AllowedSigners;
}

/**
 * A token that its firing's open found refused: why, and the
 * header read then (the set-aside copy carries its variables).
 */
export interface RefusedInput {
  readonly token: Token;
  readonly why: string;
  readonly header: PacketHeader;
}

/** A signed token's checked payload: from `offset` to the end of `fd`, which is positioned at `offset`. */
interface Checked {
  readonly header: PacketHeader;
  readonly fd: number;
  readonly offset: number;
  readonly length: number;
  /** The firing and the function's open streams still reading fd: closed when none is left. */
  users: number;
}

/** A function's input up to this size is read whole (as readSmallToken reads an unsigned one). */
const READ_WHOLE = 64 * 1024;
const CHUNK = 1 << 20;
let shared: Buffer | undefined;
const chunk = () => (shared ??= Buffer.allocUnsafe(CHUNK));

/** The inputs of one firing (one attempt): the checked descriptors of its signed tokens, closed by close(). */
export class FiringInputs {
  private constructor(private readonly checked: ReadonlyMap<Token, Checked>) {}

  /** The inputs of a firing with no signed place among them: all read by name (one object for all). */
  static readonly UNSIGNED = new FiringInputs(new Map());

  /**
   * Open and judge the tokens of signed places; a refusal closes what was opened. Errors other
   * than a refusal (the token gone) are thrown, as reading it by name would throw them.
   */
  static async open(
    tokens: readonly Token[],
    signed: ((place: string) => SignedInput | undefined) | undefined,
  ): Promise<FiringInputs | RefusedInput> {
    if (!signed) return FiringInputs.UNSIGNED;
    const checked = new Map<Token, Checked>();
    const inputs = new FiringInputs(checked);
    try {
      for (const tok of tokens) {
        const s = signed(tok.place);
        if (!s) continue;
        const c = await judge(tok, s);
        if ('why' in c) {
          inputs.close();
          return c;
        }
        checked.set(tok, c);
      }
    } catch (err) {
      inputs.close();
      throw err;
    }
    return checked.size > 0 ? inputs : FiringInputs.UNSIGNED;
  }

  /** Whether any token was judged here (a move then stages a checked copy: stageMove). */
  get anyChecked(): boolean {
    return this.checked.size > 0;
  }

  /** Done with the inputs: each descriptor closes once no function's stream reads it any more. */
  close(): void {
    for (const c of this.checked.values()) release(c);
  }

  /**
   * The single input's payload for stdin, and its header (the job's variables come from it). A
   * checked descriptor stays this object's to close (borrowed).
   */
  stdin(tok: Token): { fd: number; borrowed: boolean } {
    const c = this.checked.get(tok);
    if (c) return { fd: c.fd, borrowed: true };
    const { fd, header } = openPayloadAndHeaderSync(tok.path);
    rememberHeader(tok, header);
    return { fd, borrowed: false };
  }

  /** The tokens' payloads, one after the other, copied to `out`; their lengths. */
  copyTo(tokens: readonly Token[], out: number): number[] {
    return tokens.map((tok) => {
      const c = this.checked.get(tok);
      return c ? copy(c.fd, out) : copyPayloads([tok.path], out)[0]!;
    });
  }

  /** An and-merge's input, into a file of its own made new at `dest` (its header remembered). */
  extract(tok: Token, dest: string, owner: FileOwner | undefined): void {
    const c = this.checked.get(tok);
    if (!c) {
      rememberHeader(tok, extractPayload(tok.path, dest, owner));
      return;
    }
    const out = createFresh(dest, 0o644, owner);
    try {
      copy(c.fd, out);
    } finally {
      closeQuietly(out);
    }
  }

  /**
   * A move's payload from signed places, staged: the checked bytes copied into a file of the
   * run's (its commit then copies that, never the tokens' names, which their writers may have
   * changed again). Scratch, not fsynced: the commit's .part is (staging.ts, "Durability").
   */
  stageMove(tokens: readonly Token[], file: string): void {
    const out = createFresh(file, 0o600);
    try {
      this.copyTo(tokens, out);
    } finally {
      closeQuietly(out);
    }
  }

  /**
   * A failed firing's checked inputs, each copied into a file of the run's (`name(i)`, made new),
   * for its error tokens: their commit would otherwise read the tokens' names, which their
   * writers may have changed since the check. Positional reads: the command may have moved the
   * descriptor's offset. Scratch, not fsynced: the commit's .part is.
   */
  keepCopies(name: (i: number) => string): Map<Token, string> {
    const kept = new Map<Token, string>();
    for (const [tok, c] of this.checked) {
      const file = name(kept.size);
      const out = createFresh(file, 0o600);
      kept.set(tok, file); // named before it is filled: removed with the firing's staging either way
      try {
        for (let done = 0; done < c.length; ) {
          const n = readSomeSync(c.fd, chunk(), 0, Math.min(CHUNK, c.length - done), c.offset + done);
          if (n === 0) break;
          writeAllSync(out, chunk(), 0, n);
          done += n;
        }
      } finally {
        closeQuietly(out);
      }
    }
    return kept;
  }

  /**
   * What a function is given of a token. A small one (most) is read whole here, once, for both its
   * header and its payload; a larger one's payload is streamed when asked for.
   */
  functionInput(tok: Token): FiringInput {
    const c = this.checked.get(tok);
    const whole = c ? readWhole(c) : readSmallToken(tok.path);
    if (whole && !c) rememberHeader(tok, whole.header);
    const cmd = (whole?.header ?? tok.header).cmd;
    return {
      place: tok.place,
      seq: tok.seq,
      key: tok.key,
      env:
        cmd.kind === 'Command'
          ? Object.fromEntries(cmd.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]))
          : {},
      params: cmd.kind === 'Command' ? cmd.params.map((p) => Buffer.from(p).toString()) : [],
      // A copy per call: a reader that changes its chunks in place leaves the next call's intact.
      payload: whole
        ? () => payloadOf(Buffer.from(whole.payload))
        : c
          ? () => streamOf(c)
          : () => payloadStream(tok.path),
    };
  }
}

/** Open a signed token and judge it on that descriptor; its header is the token's from now on. */
async function judge(tok: Token, s: SignedInput): Promise<Checked | RefusedInput> {
  const opened = await s.queue.openPlainJob(tok.filename);
  let keep = false;
  try {
    const v = judgeSignedFile(opened.header, opened.payload, opened.payloadOffset, s.signers, tok.seq);
    if (v.kind === 'refused') return { token: tok, why: v.why, header: opened.header };
    // Another packet signed for the number (a replay of another key's,
    // say) must not join a merge by the key it was indexed under.
    const key = tokenKey(tok.place, opened.header);
    if (key !== tok.key)
      return {
        token: tok,
        why:
          `packet ${tok.seq} refused: its key changed since it was indexed ` +
          `(${JSON.stringify(tok.key)}, now ${JSON.stringify(key)})`,
        header: opened.header,
      };
    useCheckedHeader(tok, opened.header);
    // Judged (the seal's length is the file's): the spool of ours, or the file at its payload.
    const length = Number(opened.header.seal?.length ?? 0n);
    keep = !v.payload.spooled;
    return { header: opened.header, fd: v.payload.fd, offset: v.payload.offset, length, users: 1 };
  } finally {
    if (!keep) opened.close(); // a spool holds the bytes checked: the file is no longer read
  }
}

function release(c: Checked): void {
  if (--c.users === 0) closeQuietly(c.fd);
}

/** A small checked payload read whole (positional reads: the descriptor's offset stays), with its header. */
function readWhole(c: Checked): { header: PacketHeader; payload: Buffer } | undefined {
  if (c.length > READ_WHOLE) return undefined;
  const payload = Buffer.allocUnsafe(c.length);
  let done = 0;
  while (done < c.length) {
    const n = readSomeSync(c.fd, payload, done, c.length - done, c.offset + done);
    if (n === 0) break;
    done += n;
  }
  return { header: c.header, payload: payload.subarray(0, done) };
}

/** A larger checked payload as a stream of positional reads; the descriptor stays open until the stream closes. */
function streamOf(c: Checked): Readable {
  // Its descriptor's number may be another file's by now.
  if (c.users === 0) throw new Error('the firing has ended: its inputs are closed');
  c.users++;
  const stream = fs.createReadStream('', { fd: c.fd, start: c.offset, autoClose: false, highWaterMark: 1 << 20 });
  stream.once('close', () => release(c));
  return stream;
}
