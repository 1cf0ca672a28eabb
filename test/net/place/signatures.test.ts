/**
 * Signed places (src/net/place/signatures.ts): the net file's keys (`hosts.H.key`, a place's
 * `signers` and `from`), the signers a place lets in, a token's header signed and judged, and
 * `net put --sign` into a place that requires signatures (an unsigned put is set aside by the run).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { expect, test } from 'vitest';
import { hostView } from '../../../src/net/model/hosts.js';
import { parseNetText } from '../../../src/net/model/netfile.js';
import { checkShape } from '../../../src/net/model/schema.js';
import { Place } from '../../../src/net/place/place.js';
import { placeSigners, sha512OfPayload, signingChecks, signTokenHeader } from '../../../src/net/place/signatures.js';
import { makeHeader } from '../../../src/packet/prepare.js';
import { sealOf } from '../../../src/packet/seal/seal.js';
import { readHeaderFileSync } from '../../../src/queue/job-headers.js';
import { judgeSignedHeader } from '../../../src/sign/judge.js';
import { describeIfPresent } from '../../gate.js';
import { onPath, waitFor } from '../../harness/proc.js';
import { netDir, runFspl, tokensIn } from '../helpers.js';

function makeKey(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', path.basename(file), '-f', file]);
  if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
}

test('the schema takes signers and from (a name or a list) on a place; refuses other shapes', () => {
  expect(checkShape({ places: { a: { signers: 'allowed', from: ['x'] }, b: { from: 'x' } } }).problems).toEqual([]);
  expect(checkShape({ places: { a: { from: 3 } } }).problems.map((p) => p.path)).toEqual([['places', 'a', 'from']]);
  expect(checkShape({ places: { a: { signer: 'f' } } }).problems[0]!.message).toMatch(/unknown key "signer".*signers/);
});

test(
  "the model: signers resolved against the net's directory, " + "from as a list; remote places carry their host's key",
  () => {
    const net = parseNetText(
      `hosts:
  a: { key: keys/a }
  b: {}
places:
  src: { host: a }
  mid: { host: b, from: a, signers: allowed }
  done: { host: b }
transitions:
  ship: { host: a, in: src, out: mid }
  work: { host: b, in: mid, out: done }
`,
      '/tmp/n/net.yaml',
    );
    expect(net.places.get('mid')).toMatchObject({ signers: '/tmp/n/allowed', from: ['a'] });
    expect(hostView(net, 'a').places.get('mid')!.remote).toEqual({
      host: 'b',
      dir: '/tmp/n/places/mid',
      sync: false,
      key: '/tmp/n/keys/a',
    });
    expect(hostView(net, 'b').places.get('done')!.remote).toBeUndefined();
  },
);

describeIfPresent(
  'signed places with real keys',
  onPath('ssh-keygen') ? [] : ['ssh-keygen (apt-get install openssh-client)'],
  { what: 'signed net tests' },
  () => {
    test(
      "a place's signers: its file and the public keys of its from " +
        "hosts (PATH.pub, or the key itself), each by its host's name",
      () => {
        const dir = netDir();
        makeKey(path.join(dir, 'keys/a'));
        makeKey(path.join(dir, 'keys/c'));
        fs.rmSync(path.join(dir, 'keys/c.pub')); // c's public half read from the private key
        makeKey(path.join(dir, 'keys/other'));
        fs.writeFileSync(
          path.join(dir, 'allowed'),
          `someone ${fs.readFileSync(path.join(dir, 'keys/other.pub'), 'utf8')}`,
        );
        const net = parseNetText(
          `hosts: { a: { key: keys/a }, b: {}, c: { key: keys/c } }
places:
  src: { host: a }
  mid: { host: b, from: [a, c], signers: allowed }
  gone: { host: b, signers: nofile }
transitions:
  ship: { host: a, in: src, out: [mid, gone] }
`,
          path.join(dir, 'net.yaml'),
        );
        const signers = placeSigners(net, net.places.get('mid')!)!;
        expect(signers.size).toBe(3);
        expect(signers.source).toBe(`${path.join(dir, 'allowed')} or the keys of hosts a, c`);
        expect(placeSigners(net, net.places.get('src')!)).toBeUndefined();
        expect(() => placeSigners(net, net.places.get('gone')!)).toThrow(
          `Place gone: signers: cannot read ${path.join(dir, 'nofile')}: No such file or directory`,
        );

        // A header signed as a's run signs it: judged by the place's signers, principal a.
        const payload = Buffer.from('hello\n');
        const header = {
          ...makeHeader({ seq: 7n, cmd: { kind: 'Command', params: [], env: [] } }),
          seal: sealOf(payload),
        };
        const signed = signTokenHeader(header, path.join(dir, 'keys/a'), { data: payload });
        expect(Buffer.from(signed.signature!.sha512)).toEqual(createHash('sha512').update(payload).digest());
        expect(judgeSignedHeader(signed, signers).signer).toMatchObject({ principal: 'a' });
        const byOther = signTokenHeader(header, path.join(dir, 'keys/other'), { data: payload });
        expect(judgeSignedHeader(byOther, signers).signer).toMatchObject({ principal: 'someone' });
        const alone = placeSigners({ ...net, places: new Map() }, { ...net.places.get('mid')!, signers: undefined })!;
        expect(judgeSignedHeader(byOther, alone).why).toMatch(
          /^packet 7 refused: signed by a key not in the keys of hosts a, c: SHA256:/,
        );
        // The payload's digest from a file, as from bytes.
        fs.writeFileSync(path.join(dir, 'payload'), payload);
        expect(sha512OfPayload({ path: path.join(dir, 'payload') })).toEqual(sha512OfPayload({ data: payload }));

        // net check --host's lines.
        expect(signingChecks(hostView(net, 'b'))).toEqual([
          {
            what: 'place mid requires signatures',
            detail: `3 signers: ${path.join(dir, 'allowed')} or the keys of hosts a, c`,
          },
          {
            what: 'place gone requires signatures',
            error: `Place gone: signers: cannot read ${path.join(dir, 'nofile')}: No such file or directory`,
          },
        ]);
        expect(signingChecks(hostView(net, 'a'))).toEqual([
          {
            what: `tokens sent to other hosts are signed with ${path.join(dir, 'keys/a')}`,
            detail: expect.stringMatching(/^SHA256:/),
          },
        ]);
      },
    );

    test("an outbox's tokens and its recovery NOPs are signed with its host's key", () => {
      const dir = netDir();
      makeKey(path.join(dir, 'keys/a'));
      const net = parseNetText(
        'hosts: { a: { key: keys/a }, b: {} }\nplaces:\n  src: { host: a }\n' +
          '  mid: { host: b, from: a }\ntransitions:\n  ship: { host: a, in: src, out: mid }\n',
        path.join(dir, 'net.yaml'),
      );
      const signers = placeSigners(net, net.places.get('mid')!)!;
      const spec = hostView(net, 'a').places.get('mid')!;
      const outbox = new Place(spec, 'sequence');
      outbox.init();
      const put = outbox.putNow({ env: [], payload: { data: Buffer.from('x') } });
      expect(judgeSignedHeader(readHeaderFileSync(outbox.queue.jobPath(put.filename)), signers).signer).toMatchObject({
        principal: 'a',
      });
      // A writer that died after storing its number: recovery's NOP holds the number, signed too.
      const writers = outbox.lockWriters();
      try {
        const part = outbox.writePart(writers.read(), { env: [], payload: { data: Buffer.from('y') } }, 'test');
        fs.closeSync(part.fd);
        writers.write(part.seq + 1n);
        expect(outbox.repairPart(writers, part.temp, undefined)).toBe('nop');
      } finally {
        writers.release();
      }
      const headers = fs.readdirSync(outbox.queue.jobsDir).map((n) => readHeaderFileSync(outbox.queue.jobPath(n)));
      const nop = headers.find((h) => h.cmd.kind === 'NOP')!;
      expect(nop.seq).toBe(2n);
      expect(judgeSignedHeader(nop, signers).signer).toMatchObject({ principal: 'a' });
    });

    test(
      'net put --sign into a place that requires signatures ' +
        'runs; an unsigned put is set aside by the run, with why',
      async () => {
        const dir = netDir();
        makeKey(path.join(dir, 'keys/alice'));
        fs.writeFileSync(
          path.join(dir, 'allowed'),
          `alice ${fs.readFileSync(path.join(dir, 'keys/alice.pub'), 'utf8')}`,
        );
        const file = path.join(dir, 'net.yaml');
        fs.writeFileSync(
          file,
          'places:\n  src: { signers: allowed }\n  done: {}\n' +
            'transitions:\n  up: { in: src, run: "tr a-z A-Z", out: done }\n',
        );
        const net = Net.load(file);
        net.init();
        const signed = await runFspl(
          ['net', 'put', file, 'src', '-k', 'good', '--sign', path.join(dir, 'keys/alice')],
          {
            input: 'signed\n',
          },
        );
        expect(signed.stderr).toBe('');
        const unsigned = await runFspl(['net', 'put', file, 'src', '-k', 'bad'], { input: 'unsigned\n' });
        expect(unsigned.stderr).toBe(
          'fspl net put: warning: place src requires signatures: unsigned ' +
            '(no --sign KEY), this token will be set aside by the run\n',
        );
        const bad = await runFspl(['net', 'put', file, 'src', '--sign', path.join(dir, 'nokey')], { input: 'x' });
        expect(bad.status).not.toBe(0);
        expect(bad.stderr).toMatch(/Cannot sign tokens with .*nokey/);
        const stop = new AbortController();
        const run = net.run({ signal: stop.signal, pollInterval: 0.05 });
        await waitFor(
          'the signed token done, the other set aside',
          () =>
            fs.readdirSync(path.join(dir, 'places/src/jobs')).length === 0 &&
            fs.readdirSync(path.join(dir, 'places/done/jobs')).length === 1,
        );
        stop.abort();
        await run;
        expect((await tokensIn(path.join(dir, 'places/done'))).map((t) => [t.key, t.payload])).toEqual([
          ['good', 'SIGNED\n'],
        ]);
        const aside = await tokensIn(path.join(dir, 'net.state/set-aside'));
        expect(aside.map((t) => [t.key, t.env.SET_ASIDE_REASON, t.payload])).toEqual([
          ['bad', 'packet 2 refused: not signed', 'unsigned\n'],
        ]);
        expect((await net.status()).places.find((p) => p.name === 'src')!.refused).toBe(1);
      },
    );
  },
);
