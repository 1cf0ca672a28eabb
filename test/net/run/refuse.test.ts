/**
 * Signed places (issue 39, nets): a synced-folder net over two hosts with `from: [a]`. Host a's run
 * signs what it sends (its outbox for b's `inbox`); a plain copy of the outbox's jobs/ into the
 * place's jobs/ stands in for the sync tool (test/net/hosts/synced.test.ts runs a real Syncthing).
 * Tokens dropped into b's place by a third party (unsigned, signed by another key, an honest token
 * with its payload changed) are set aside with the reason, never fired; the honest ones arrive
 * once, in order; status, --json and /metrics say how many were refused.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Net, preparePacket } from 'filespooler';
import { expect, test } from 'vitest';
import { hostView } from '../../../src/net/model/hosts.js';
import { netMetricsText } from '../../../src/net/observe/metrics.js';
import { netStatus } from '../../../src/net/observe/status.js';
import { describeIfPresent } from '../../gate.js';
import { onPath, waitFor } from '../../harness/proc.js';
import { netDir, runFspl, tokensIn } from '../helpers.js';

const jobsOf = (dir: string) =>
  fs
    .readdirSync(path.join(dir, 'jobs'))
    .filter((n) => /^fspl-.*\.fspl$/.test(n))
    .sort();

function makeKey(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', path.basename(file), '-f', file]);
  if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
}

/** Run one host until `until` holds, then stop it. */
async function runUntil(net: Net, host: string, what: string, until: () => boolean): Promise<void> {
  const stop = new AbortController();
  const run = net.run({ host, signal: stop.signal, pollInterval: 0.05 });
  try {
    await waitFor(what, until, 30_000, 50);
  } finally {
    stop.abort();
    await run;
  }
}

describeIfPresent(
  'a signed place fed through a synced folder',
  onPath('ssh-keygen') ? [] : ['ssh-keygen (apt-get install openssh-client)'],
  { what: 'signed net tests' },
  () => {
    test(
      'forged tokens dropped into the place are set aside ' + 'with the reason; the honest ones run once, in order',
      async () => {
        const dir = netDir();
        makeKey(path.join(dir, 'keys/a'));
        makeKey(path.join(dir, 'keys/mallory'));
        const file = path.join(dir, 'net.yaml');
        fs.writeFileSync(
          file,
          `
hosts:
  a: { key: keys/a }
  b: {}
places:
  src: { host: a }
  inbox: { host: b, sync: true, from: [a] }
  done: { host: b }
transitions:
  ship: { host: a, in: src, out: inbox }
  work: { host: b, in: inbox, run: "tr a-z A-Z", out: done }
`,
        );
        const net = Net.load(file);
        net.init({ host: 'a' });
        net.init({ host: 'b' });
        const outbox = path.join(dir, 'net.state/a/outbox/inbox');
        const inbox = path.join(dir, 'places/inbox');
        const done = path.join(dir, 'places/done');
        const N = 6;
        for (let i = 0; i < N; i++) await net.put('src', Buffer.from(`token ${i}\n`), { key: `k${i}` });
        await runUntil(
          net,
          'a',
          `${N} tokens in a's outbox`,
          () => fs.existsSync(path.join(outbox, 'jobs')) && jobsOf(outbox).length === N,
        );
        const sent = jobsOf(outbox);

        // The third party's tokens, there first: an unsigned #2, a #3 signed by a key a does not
        // hold, and honest #4 with its payload changed (same header, same signature).
        const forge = async (name: string, options: Parameters<typeof preparePacket>[0]) =>
          pipeline(preparePacket(options), fs.createWriteStream(path.join(inbox, 'jobs', name)));
        await forge('fspl-forged-unsigned.fspl', { seq: 2n, env: { KEY: 'evil2' }, payload: Buffer.from('rm -rf\n') });
        await forge('fspl-forged-mallory.fspl', {
          seq: 3n,
          env: { KEY: 'evil3' },
          payload: Buffer.from('mallory\n'),
          sign: { key: path.join(dir, 'keys/mallory') },
        });
        const honest4 = fs.readFileSync(path.join(outbox, 'jobs', sent[3]!));
        const changed = Buffer.from(honest4);
        changed[changed.length - 2] = 'X'.charCodeAt(0);
        fs.writeFileSync(path.join(inbox, 'jobs', 'fspl-forged-changed.fspl'), changed);
        // The sync tool delivers #1 only, for now.
        fs.copyFileSync(path.join(outbox, 'jobs', sent[0]!), path.join(inbox, 'jobs', sent[0]!));
        await runUntil(net, 'b', 'the first token done and the forgeries set aside', () => {
          const left = jobsOf(inbox);
          return fs.existsSync(path.join(done, 'jobs')) && jobsOf(done).length === 1 && left.length === 0;
        });
        // Then the rest, in reverse order (a sync tool keeps none).
        for (const name of [...sent.slice(1)].reverse())
          fs.copyFileSync(path.join(outbox, 'jobs', name), path.join(inbox, 'jobs', name));
        await runUntil(net, 'b', `${N} tokens done`, () => jobsOf(done).length === N && jobsOf(inbox).length === 0);

        const out = await tokensIn(done);
        expect(out.map((t) => t.key)).toEqual(Array.from({ length: N }, (_, i) => `k${i}`));
        expect(out.map((t) => t.payload)).toEqual(Array.from({ length: N }, (_, i) => `TOKEN ${i}\n`));

        // Set aside, with why; nothing lost.
        const aside = await tokensIn(path.join(dir, 'net.state/b/set-aside'));
        const reasons = Object.fromEntries(aside.map((t) => [t.env.SET_ASIDE_FILE, t.env.SET_ASIDE_REASON]));
        expect(Object.keys(reasons).sort()).toEqual([
          'fspl-forged-changed.fspl',
          'fspl-forged-mallory.fspl',
          'fspl-forged-unsigned.fspl',
        ]);
        expect(reasons['fspl-forged-unsigned.fspl']).toBe('packet 2 refused: not signed');
        expect(reasons['fspl-forged-mallory.fspl']).toMatch(
          /^packet 3 refused: signed by a key not in the keys of host a: SHA256:/,
        );
        expect(reasons['fspl-forged-changed.fspl']).toMatch(/^packet 4 refused: payload does not match its signature/);
        expect(aside.map((t) => t.env.SET_ASIDE_PLACE)).toEqual(['inbox', 'inbox', 'inbox']);
        expect(aside.find((t) => t.env.SET_ASIDE_FILE === 'fspl-forged-unsigned.fspl')!.payload).toBe('rm -rf\n');

        // Status (text, JSON) and /metrics say so.
        const report = await netStatus(hostView(net.model, 'b'));
        expect(report.places.find((p) => p.name === 'inbox')!.refused).toBe(3);
        expect(report.places.find((p) => p.name === 'done')!.refused).toBeUndefined();
        expect(netMetricsText(report)).toContain('fspl_net_refused_tokens_total{place="inbox"} 3');
        const text = await runFspl(['net', 'status', file, '--host', 'b']);
        expect(text.stdout).toMatch(/inbox\s+inbox\s+0\s.*3 refused \(signature\), set aside/);
        const json = await runFspl(['net', 'status', file, '--host', 'b', '--json']);
        expect(JSON.parse(json.stdout).places.find((p: { name: string }) => p.name === 'inbox').refused).toBe(3);
      },
    );

    test(
      'an unknown host in from, a from host without key, ' + 'and a place its own host writes: one line each',
      async () => {
        const dir = netDir();
        const file = path.join(dir, 'net.yaml');
        fs.writeFileSync(
          file,
          `
hosts:
  a: {}
  b: { key: 3 }
places:
  src: { host: a, from: [a, zz] }
  mid: { host: b, from: a, signers: "" }
transitions:
  u: { host: a, in: src, out: mid }
  v: { host: b, in: mid, out: mid }
`,
        );
        const r = await runFspl(['net', 'check', file]);
        expect(r.status).not.toBe(0);
        expect(r.stderr + r.stdout).toMatch(/from: host a has no key/);
        expect(r.stderr + r.stdout).toMatch(/from: unknown host "zz"/);
        expect(r.stderr + r.stdout).toMatch(/key is the path of the OpenSSH private key/);
        expect(r.stderr + r.stdout).toMatch(
          /Place mid requires signatures but transition v on its own host writes it unsigned/,
        );
      },
    );
  },
);
