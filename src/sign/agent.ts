/**
 * A minimal ssh-agent client (draft-miller-ssh-agent): ask the agent at SSH_AUTH_SOCK to sign, or
 * whether it holds a key. One request per connection; the reply is bounded in size and in time
 * (an agent may wait for a confirmation, ssh-add -c, or a touch of a security key).
 */
import net from 'node:net';
import { SignatureError, systemErrorWords } from '../base/errors.js';
import type { PublicKey } from './public-key.js';
import { WireReader, wireConcat, wireString, wireU32 } from './wire.js';

const SSH_AGENT_FAILURE = 5;
const SSH2_AGENTC_REQUEST_IDENTITIES = 11;
const SSH2_AGENT_IDENTITIES_ANSWER = 12;
const SSH2_AGENTC_SIGN_REQUEST = 13;
const SSH2_AGENT_SIGN_RESPONSE = 14;
/** Ask for rsa-sha2-512, not SHA-1 "ssh-rsa", which SSHSIG refuses. */
const SSH_AGENT_RSA_SHA2_512 = 4;

/** No honest reply comes near this: a signature or a list of keys is a few KiB. */
const MAX_REPLY = 256 * 1024;
/** Long enough for a person to confirm a signature (ssh-add -c) or touch a key. */
const TIMEOUT_MS = 30_000;

/** The SSH signature blob of `data` made by the agent's `publicKey`. */
export async function agentSign(
  socket: string,
  publicKey: PublicKey,
  data: Buffer,
  timeoutMs = TIMEOUT_MS,
): Promise<Buffer> {
  const flags = publicKey.type === 'ssh-rsa' ? SSH_AGENT_RSA_SHA2_512 : 0;
  const reply = await request(
    socket,
    SSH2_AGENTC_SIGN_REQUEST,
    wireConcat(wireString(publicKey.blob), wireString(data), wireU32(flags)),
    timeoutMs,
  );
  const fingerprint = publicKey.fingerprint;
  if (reply.type === SSH_AGENT_FAILURE)
    throw new SignatureError(`ssh-agent would not sign with ${fingerprint} (is it added? ssh-add KEY)`, {
      fingerprint,
    });
  if (reply.type !== SSH2_AGENT_SIGN_RESPONSE)
    throw new SignatureError(`ssh-agent answered a sign request with message ${reply.type}`, { fingerprint });
  const r = new WireReader(reply.body, 'ssh-agent reply');
  const signature = Buffer.from(r.string());
  r.done();
  return signature;
}

/** Whether the agent holds `publicKey`'s private half. */
export async function agentHasKey(socket: string, publicKey: PublicKey, timeoutMs = TIMEOUT_MS): Promise<boolean> {
  const reply = await request(socket, SSH2_AGENTC_REQUEST_IDENTITIES, Buffer.alloc(0), timeoutMs);
  if (reply.type !== SSH2_AGENT_IDENTITIES_ANSWER)
    throw new SignatureError(`ssh-agent answered a list request with message ${reply.type}`);
  const r = new WireReader(reply.body, 'ssh-agent reply');
  const count = r.u32();
  // A count larger than the keys sent is caught by the reads: each key takes at least 8 bytes.
  for (let i = 0; i < count; i++) {
    const blob = r.string();
    r.string(); // comment
    if (blob.equals(publicKey.blob)) return true;
  }
  return false;
}

/** One request sent and its reply read: the message type and its body. */
function request(
  socket: string,
  type: number,
  body: Buffer,
  timeoutMs: number,
): Promise<{ type: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socket);
    const chunks: Buffer[] = [];
    let got = 0;
    const finish = (err: Error | undefined, reply?: { type: number; body: Buffer }) => {
      clearTimeout(timer);
      conn.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => finish(new SignatureError(`ssh-agent at ${socket} did not answer within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    conn.on('error', (err) =>
      finish(
        new SignatureError(`cannot reach ssh-agent at ${socket}: ${systemErrorWords(err) ?? err.message}`, {
          cause: err,
        }),
      ),
    );
    conn.on('data', (d: Buffer) => {
      chunks.push(d);
      got += d.length;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, got);
      chunks.splice(0, chunks.length, all);
      if (got < 4) return;
      const len = all.readUInt32BE(0);
      if (len < 1 || len > MAX_REPLY)
        return finish(new SignatureError(`ssh-agent at ${socket} sent a reply of ${len} bytes (at most ${MAX_REPLY})`));
      if (got >= 4 + len) finish(undefined, { type: all[4]!, body: all.subarray(5, 4 + len) });
    });
    conn.on('end', () => finish(new SignatureError(`ssh-agent at ${socket} closed the connection without answering`)));
    conn.write(wireConcat(wireU32(body.length + 1), Buffer.of(type), body));
  });
}
