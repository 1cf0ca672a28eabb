/**
 * Filespooler's NNCP recipes (docs/transports.md, "NNCP"), with real NNCP nodes (test/harness/
 * nncp.ts): packets handed to `nncp-exec` for an exec handle that runs `fspl queue-write`, and
 * packets sent with `nncp-file` into the queue's jobs/. Moved online (nncp-daemon, nncp-call) or
 * as files (nncp-xfer through a directory, as on a USB stick), with our fspl on both sides and
 * with the reference on one side. NNCP does not keep the order packets were sent in (they are
 * sent here in reverse); the queue does. What a packet delivered twice does is tested too: it is
 * never run twice, but with the plain handle it can stop the queue; the documented handle drops
 * the copy.
 */

import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, expect, it } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { NNCP_TOOLS, type NncpNodeOptions, type NncpPair, startNncpPair } from '../harness/nncp.js';
import { onPath } from '../harness/proc.js';
import { ROOT, tempDir } from '../helpers.js';
import { fspl, fsplPath, type Impl, jobFiles, prepare, processQueue, REF_BIN } from './fspl.js';

const missing = [
  ...NNCP_TOOLS.filter((t) => !onPath(t)),
  ...(fs.existsSync(REF_BIN) ? [] : [`the reference fspl (${REF_BIN})`]),
];
const docs = fs.readFileSync(path.join(ROOT, 'docs', 'transports.md'), 'utf8');
const onceHandle = /### A handle that stores each packet once[\s\S]*?```sh\n([\s\S]*?)```/.exec(docs)?.[1];

const pairs: NncpPair[] = [];
afterEach(async () => {
  for (const p of pairs.splice(0)) await p.stop();
});

/** A pair whose node b accepts from a: the handle `fspl` (ARGV) and/or files into INCOMING. */
async function pair(b: NncpNodeOptions, PATH: string): Promise<NncpPair> {
  const p = await startNncpPair({ b, env: { PATH } });
  pairs.push(p);
  return p;
}

/** N packets from IMPL's prepare, payload "job I". */
function packets(impl: Impl, n: number): Buffer[] {
  const seqfile = path.join(tempDir(), 'seq');
  return Array.from({ length: n }, (_, i) => prepare(impl, seqfile, `job ${i + 1}`));
}

const expected = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1} job ${i + 1}`);

/** A queue made by IMPL. */
function queue(impl: Impl): string {
  const q = path.join(tempDir(), 'queue');
  expect(fspl(impl, ['queue-init', '-q', q]).status).toBe(0);
  return q;
}

async function move(p: NncpPair, how: 'online' | 'xfer'): Promise<void> {
  if (how === 'online') await p.online('a', 'b');
  else await p.xfer('a', 'b', path.join(tempDir(), 'stick'));
}

describeIfPresent(
  'Filespooler over NNCP',
  missing,
  { what: 'NNCP transport tests', note: 'apt-get install nncp filespooler' },
  () => {
    it.each([
      ['ours', 'ours', 'online'],
      ['ours', 'ours', 'xfer'],
      ['ref', 'ours', 'xfer'],
      ['ours', 'ref', 'online'],
    ] as const)(
      'nncp-exec into a `fspl queue-write` handle: %s prepare, %s queue, moved %s; run in order',
      async (sender, receiver, how) => {
        const q = queue(receiver);
        const p = await pair({ exec: { fspl: ['fspl', 'queue-write', '-q', q] } }, fsplPath(receiver).PATH);
        const pkts = packets(sender, 6);
        for (const pkt of [...pkts].reverse()) await p.run('a', 'nncp-exec', ['b', 'fspl'], pkt);
        expect(p.outbound('a')).toHaveLength(6);
        await move(p, how);
        await p.toss('b');
        expect(jobFiles(q)).toHaveLength(6);
        const r = processQueue(receiver, q);
        expect(r.status, r.stderr).toBe(0);
        expect(r.ran).toEqual(expected(6));
        expect(fspl(receiver, ['queue-get-next', '-q', q]).stdout).toBe('7\n');
      },
    );

    it.each([
      ['ours', 'ours'],
      ['ref', 'ours'],
      ['ours', 'ref'],
    ] as const)(
      'nncp-file into jobs/ under an fspl-*.fspl name: %s prepare, %s queue; run in order',
      async (sender, receiver) => {
        const q = queue(receiver);
        const p = await pair({ incoming: path.join(q, 'jobs') }, fsplPath(receiver).PATH);
        const pkts = packets(sender, 6);
        for (const pkt of [...pkts].reverse()) {
          const name = fspl(sender, ['gen-filename']).stdout.trim();
          expect(name).toMatch(/^fspl-.*\.fspl$/);
          await p.run('a', 'nncp-file', ['-', `b:${name}`], pkt);
        }
        await move(p, 'xfer');
        await p.toss('b');
        // NNCP writes each file under a temporary name of its own (nncpfile...), then renames it.
        expect(fs.readdirSync(path.join(q, 'jobs')).sort()).toEqual(jobFiles(q).sort());
        const r = processQueue(receiver, q);
        expect(r.status, r.stderr).toBe(0);
        expect(r.ran).toEqual(expected(6));
      },
    );

    it(
      'a handle that fails (no queue yet) leaves the packet ' + 'with NNCP, which runs it again at the next toss',
      async () => {
        const q = path.join(tempDir(), 'queue');
        const p = await pair({ exec: { fspl: ['fspl', 'queue-write', '-q', q] } }, fsplPath('ours').PATH);
        await p.run('a', 'nncp-exec', ['b', 'fspl'], packets('ours', 1)[0]);
        await move(p, 'xfer');
        await expect(p.toss('b')).rejects.toThrow();
        expect(fs.existsSync(q)).toBe(false);
        expect(fspl('ours', ['queue-init', '-q', q]).status).toBe(0);
        await p.toss('b');
        expect(processQueue('ours', q).ran).toEqual(expected(1));
      },
    );

    /**
     * The transfer directory copied before b reads it (b's nncp-xfer -rx takes the packets out of
     * it), and offered again later: NNCP tosses a replayed packet again unless told -seen.
     */
    async function sendWithReplay(p: NncpPair, pkts: Buffer[]): Promise<{ replay: () => Promise<void> }> {
      for (const pkt of pkts) await p.run('a', 'nncp-exec', ['b', 'fspl'], pkt);
      const stick = path.join(tempDir(), 'stick');
      fs.mkdirSync(stick);
      await p.run('a', 'nncp-xfer', ['-mkdir', '-tx', stick]);
      const copy = path.join(tempDir(), 'stick-copy');
      fs.cpSync(stick, copy, { recursive: true });
      await p.run('b', 'nncp-xfer', ['-rx', stick]);
      return {
        replay: async () => {
          await p.run('b', 'nncp-xfer', ['-rx', copy]);
        },
      };
    }

    it(
      'a packet delivered twice to the plain queue-write handle is never run twice; ' +
        'a copy that arrives before the job ran stops the queue (both implementations)',
      async () => {
        const q = queue('ours');
        const p = await pair({ exec: { fspl: ['fspl', 'queue-write', '-q', q] } }, fsplPath('ours').PATH);
        const { replay } = await sendWithReplay(p, packets('ours', 3));
        await p.toss('b');
        await replay();
        await p.toss('b');
        expect(jobFiles(q)).toHaveLength(6);
        for (const impl of ['ours', 'ref'] as const) {
          const r = processQueue(impl, q);
          expect([r.status, r.ran]).toEqual([1, []]);
        }
        const status = fspl('ours', ['queue-status', '-q', q, '--json']);
        expect(status.status).toBe(3);
        const s = JSON.parse(status.stdout);
        expect(s.problems.map((x: { code: string }) => x.code)).toContain('duplicate-seq');
        expect(s.duplicates.map((d: { seq: string | number }) => String(d.seq)).sort()).toEqual(['1', '2', '3']);
        // The copies are the same packet: removing one file of each pair lets the queue go on.
        for (const d of s.duplicates as { files: string[] }[]) fs.rmSync(path.join(q, 'jobs', d.files[1]));
        expect(processQueue('ours', q).ran).toEqual(expected(3));
      },
    );

    it('a copy delivered after its job ran lies below nextseq and is never run', async () => {
      const q = queue('ours');
      const p = await pair({ exec: { fspl: ['fspl', 'queue-write', '-q', q] } }, fsplPath('ours').PATH);
      const { replay } = await sendWithReplay(p, packets('ours', 3));
      await p.toss('b');
      expect(processQueue('ours', q).ran).toEqual(expected(3));
      await replay();
      await p.toss('b');
      expect(jobFiles(q)).toHaveLength(3);
      expect(processQueue('ours', q)).toMatchObject({ status: 0, ran: [] });
      const s = JSON.parse(fspl('ours', ['queue-status', '-q', q, '--json']).stdout);
      expect([s.state, s.below_next.count]).toEqual(['idle', 3]);
      expect(fspl('ours', ['queue-status', '-q', q]).stdout).toMatch(
        /below next:\s+3 jobs: 1-3 \(already processed or skipped\)/,
      );
    });

    it('nncp-toss -seen: NNCP itself skips a replayed packet', async () => {
      const q = queue('ours');
      const p = await pair({ exec: { fspl: ['fspl', 'queue-write', '-q', q] } }, fsplPath('ours').PATH);
      const { replay } = await sendWithReplay(p, packets('ours', 2));
      await p.toss('b', ['-seen']);
      await replay();
      await p.toss('b', ['-seen']);
      expect(jobFiles(q)).toHaveLength(2);
      expect(processQueue('ours', q).ran).toEqual(expected(2));
    });

    it('nncp-file: a second copy under the same name lands as NAME.0, which is no job name', async () => {
      const q = queue('ours');
      const p = await pair({ incoming: path.join(q, 'jobs') }, fsplPath('ours').PATH);
      const [pkt] = packets('ours', 1);
      const name = fspl('ours', ['gen-filename']).stdout.trim();
      await p.run('a', 'nncp-file', ['-', `b:${name}`], pkt);
      await p.run('a', 'nncp-file', ['-', `b:${name}`], pkt);
      await move(p, 'xfer');
      await p.toss('b');
      expect(fs.readdirSync(path.join(q, 'jobs')).sort()).toEqual([name, `${name}.0`]);
      expect(processQueue('ours', q).ran).toEqual(expected(1));
      expect(fspl('ours', ['queue-status', '-q', q]).stdout).toMatch(/other files:\s+1/);
    });

    it.each(['ours', 'ref'] as const)(
      "docs/transports.md's handle stores each packet once, whenever the copy comes (fspl: %s)",
      async (impl) => {
        expect(onceHandle).toBeDefined();
        const { bin, PATH } = fsplPath(impl);
        const handle = path.join(bin, 'fspl-nncp-write');
        fs.writeFileSync(handle, onceHandle!, { mode: 0o755 });
        const q = queue(impl);
        const p = await pair({ exec: { fspl: [handle, q] } }, PATH);
        const { replay } = await sendWithReplay(p, packets('ours', 4));
        await p.toss('b');
        // Job 1 runs before the copies come: its copy is below nextseq; 2-4 still wait.
        const first = fspl(impl, ['queue-process', '-q', q, '-n', '1', 'true']);
        expect(first.status, first.stderr).toBe(0);
        await replay();
        await p.toss('b');
        expect(jobFiles(q)).toHaveLength(3);
        const r = processQueue(impl, q);
        expect(r.status, r.stderr).toBe(0);
        expect(r.ran).toEqual(expected(4).slice(1));
        // Not a packet: refused, so NNCP keeps it and says so.
        await p.run('a', 'nncp-exec', ['b', 'fspl'], 'not a packet');
        await move(p, 'xfer');
        const toss = await execa('nncp-toss', ['-cfg', p.b.cfg], { env: p.env, reject: false });
        expect(toss.exitCode).not.toBe(0);
        expect(jobFiles(q)).toHaveLength(0);
      },
    );
  },
);
