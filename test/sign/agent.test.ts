/**
 * The ssh-agent client against agents that misbehave (a fake one on a Unix socket): a reply too
 * large, none at all, a hang-up, a lying count. The real agent is in signer.test.ts.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import { agentHasKey, agentSign, parsePublicKeyBlob, wireConcat, wireString, wireU32 } from '../../src/sign/index.js';
import { keyBlobOf } from '../../src/sign/private-key.js';
import { tempDir } from '../helpers.js';

const KEY = parsePublicKeyBlob(keyBlobOf(crypto.generateKeyPairSync('ed25519').publicKey));
const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A fake agent that answers each connection's first bytes with `reply` (or nothing, or a hang-up). */
async function fakeAgent(reply: Buffer | 'silent' | 'hang-up'): Promise<string> {
  const sock = path.join(tempDir(), 'agent.sock');
  const server = net.createServer((c) => {
    c.on('error', () => {});
    c.once('data', () => {
      if (reply === 'hang-up') c.end();
      else if (reply !== 'silent') c.write(reply);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  return sock;
}

/** A message as the agent frames it. */
const frame = (type: number, body: Buffer = Buffer.alloc(0)) =>
  wireConcat(wireU32(body.length + 1), Buffer.of(type), body);

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SignatureError);
    return (err as SignatureError).message;
  }
  throw new Error('it did not reject');
}

test('a reply longer than 256 KiB is refused before it is read', async () => {
  const sock = await fakeAgent(wireConcat(wireU32(0x7fffffff), Buffer.of(14)));
  expect(await refusal(agentSign(sock, KEY, Buffer.from('x')))).toBe(
    `ssh-agent at ${sock} sent a reply of 2147483647 bytes (at most 262144)`,
  );
});

test('an agent that does not answer is given up after the timeout; one that hangs up is named', async () => {
  const silent = await fakeAgent('silent');
  expect(await refusal(agentSign(silent, KEY, Buffer.from('x'), 200))).toBe(
    `ssh-agent at ${silent} did not answer within 0.2 s`,
  );
  const rude = await fakeAgent('hang-up');
  expect(await refusal(agentHasKey(rude, KEY))).toBe(`ssh-agent at ${rude} closed the connection without answering`);
});

test('a failure, an unexpected message, a lying key count, a reply cut in two', async () => {
  expect(await refusal(agentSign(await fakeAgent(frame(5)), KEY, Buffer.from('x')))).toMatch(
    /^ssh-agent would not sign with SHA256:/,
  );
  expect(await refusal(agentSign(await fakeAgent(frame(6)), KEY, Buffer.from('x')))).toBe(
    'ssh-agent answered a sign request with message 6',
  );
  expect(await refusal(agentHasKey(await fakeAgent(frame(12, wireU32(1000))), KEY))).toMatch(
    /^malformed ssh-agent reply: truncated/,
  );
  const listed = frame(
    12,
    wireConcat(wireU32(2), wireString('junk'), wireString(''), wireString(KEY.blob), wireString('c')),
  );
  expect(await agentHasKey(await fakeAgent(listed), KEY)).toBe(true);
  // A reply in two writes is read whole.
  const sig = frame(14, wireString(Buffer.from('not really a signature')));
  const sock = path.join(tempDir(), 'split.sock');
  const server = net.createServer((c) =>
    c.once('data', () => (c.write(sig.subarray(0, 3)), setTimeout(() => c.end(sig.subarray(3)), 50))),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  expect((await agentSign(sock, KEY, Buffer.from('x'))).toString()).toBe('not really a signature');
});
