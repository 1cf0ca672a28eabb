/**
 * A place in a synced folder: host a's outbox for place `inbox` (on host b) is shared by a real
 * Syncthing pair (test/harness/syncthing.ts), send-only on a, receive-only on b, into inbox/jobs.
 * 200 tokens written on a run on b exactly once and in sequence order, and the runner on b never
 * reads a Syncthing temporary file as a job.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { afterAll, expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { onPath, waitFor } from '../../harness/proc.js';
import { netnsSupport, SYNCTHING_BIN, type SyncthingPair, startSyncthingPair } from '../../harness/syncthing.js';
import { netDir, runFspl, spawnFspl, tokensIn } from '../helpers.js';

function missing(): string[] {
  const out = [SYNCTHING_BIN, 'unshare', 'ip']
    .filter((c) => !onPath(c))
    .map((c) => `${c} (apt-get install syncthing iproute2 util-linux)`);
  if (out.length === 0 && netnsSupport().problem) out.push(netnsSupport().problem!);
  return out;
}

const count = (dir: string) => fs.readdirSync(path.join(dir, 'jobs')).filter((n) => /^fspl-.*\.fspl$/.test(n)).length;

describeIfPresent(
  'a place in a folder synced by Syncthing',
  missing(),
  { what: 'Syncthing net tests', note: 'Syncthing could not be started: the synced-folder topology is untested' },
  () => {
    let pair: SyncthingPair | undefined;
    afterAll(async () => {
      await pair?.stop();
    });

    test('200 tokens written on a run on b exactly once, in ' +
      'sequence order; no temporary file is read as a job', async () => {
      const dir = netDir();
      const file = path.join(dir, 'net.yaml');
      fs.writeFileSync(
        file,
        `
places:
  src: { host: a }
  inbox: { host: b, sync: true }
  done: { host: b }
transitions:
  ship: { host: a, in: src, out: inbox }
  work: { host: b, in: inbox, run: "tr a-z A-Z", out: done }
`,
      );
      const net = Net.load(file);
      net.init({ host: 'a' });
      net.init({ host: 'b' });
      // The outbox of a for inbox: its jobs/ is what Syncthing shares (send-only).
      const outboxJobs = path.join(dir, 'net.state/a/outbox/inbox/jobs');
      fs.mkdirSync(outboxJobs, { recursive: true });
      const inbox = path.join(dir, 'places/inbox');
      pair = await startSyncthingPair({
        pathA: outboxJobs,
        pathB: path.join(inbox, 'jobs'),
        // Share job files only (docs/distributed.md): not the runner's own net-*.part temporaries.
        ignores: ['!/fspl-*.fspl', '*'],
        trace: 'model,fs',
      });
      for (let i = 0; i < 200; i++) await net.put('src', Buffer.from(`token ${i}\n`), { key: `k${i}` });
      const runA = spawnFspl(['net', 'run', file, '--host', 'a', '--log-level', 'warn']);
      const runB = spawnFspl(['net', 'run', file, '--host', 'b', '--log-level', 'debug']);
      let logB = '';
      runB.stderr!.on('data', (d) => (logB += d));
      runA.stderr!.on('data', () => {});
      await waitFor('200 tokens done on b', () => count(path.join(dir, 'places/done')) >= 200, 240_000, 200);
      const status = await runFspl(['net', 'status', file, '--host', 'a']);
      expect(status.stdout).toMatch(/inbox\s+outbox.*shared by the sync tool; 200 kept/);
      for (const c of [runA, runB]) c.kill('SIGTERM');
      await Promise.all([runA, runB].map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r)))));

      const done = await tokensIn(path.join(dir, 'places/done'));
      expect(done.map((t) => t.key)).toEqual(Array.from({ length: 200 }, (_, i) => `k${i}`));
      expect(done.map((t) => t.payload)).toEqual(Array.from({ length: 200 }, (_, i) => `TOKEN ${i}\n`));
      expect(count(inbox)).toBe(0);
      // Syncthing did write temporary files into inbox/jobs (its fs trace), and b read none of them.
      const stLog = fs.readFileSync(pair.b.logPath, 'utf8');
      expect(stLog).toMatch(/\.syncthing\.fspl-[0-9a-f-]+\.fspl\.tmp/);
      const read = [...logB.matchAll(/Read the header of job (\S+) in place inbox/g)].map((m) => m[1]!);
      expect(read.length).toBe(200);
      expect(read.every((n) => /^fspl-[0-9a-f-]+\.fspl$/.test(n))).toBe(true);
      expect(logB).not.toMatch(/\.syncthing\./);
    }, 360_000);
  },
);
