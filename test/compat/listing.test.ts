/**
 * Read-only views of a queue (queue-ls, queue-info, queue-payload, queue-get-next) and
 * stdin-info, compared in TZ=UTC and TZ=America/Chicago (and a few other zones), on queues with
 * junk files, non-matching names, big sequence numbers and odd timestamps.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  arrangeReaddirNotSorted,
  both,
  describeCompat,
  expectSameOutput,
  fspl,
  listVectors,
  makePacket,
  sha256,
  tmpDir,
  tmpDirForSuite,
  U64_MAX,
  vector,
} from './harness.js';

const ZONES = ['UTC', 'America/Chicago'];

/** Job files of the listing queue: name -> packet source. */
async function listingJobs(): Promise<Record<string, Buffer>> {
  const v = (n: string) => fs.readFileSync(vector(n));
  return {
    'fspl-a.fspl': v('command-env-binary.fspl'), // seq 1, raw bytes in FSPL_SET_ values
    'fspl-.fspl': await makePacket('ref', {
      seq: 2,
      params: ['p1', 'p 2'],
      payload: 'july\n',
      time: '2030-07-02 03:04:05',
    }),
    'fspl-max.fspl': v('seq-u64-max.fspl'),
    'fspl-2p53.fspl': v('seq-2pow53-plus-1.fspl'),
    'fspl-far.fspl': await makePacket('ref', { seq: 8, kind: 'nop', time: '2150-01-01 00:00:00' }),
    'fspl-mid.fspl': await makePacket('ref', { seq: '123456789012345678', kind: 'nop', time: '1970-01-01 00:00:00' }),
    'fspl-0.fspl': await makePacket('ref', { seq: 0, kind: 'fail', time: '2030-03-10 08:00:00' }),
    'fspl-big.fspl': await makePacket('ref', {
      seq: 5,
      env: { K: 'v' },
      payload: Buffer.alloc(300_000, 0xab),
      time: '2030-11-03 07:30:00',
    }),
    // readable packets whose names don't count as jobs
    'fspl.fspl': v('nop.fspl'),
    'FSPL-9.fspl': v('nop.fspl'),
    '.fspl-hidden.fspl': v('nop.fspl'),
    'xfspl-7.fspl': v('nop.fspl'),
    'not-matching.fspl': v('nop.fspl'),
    'fspl-7.fspl.tmp': v('nop.fspl'),
    'tmp-fspl-0e3c1a5e-7d4c-4c2f-9f0e-2a6a3c1b9d11.fspl.tmp': v('nop.fspl'),
    'fspl-a.fspl.out': Buffer.from('output\n'),
    'other.txt': Buffer.from('hello\n'),
    // matching names that can't be read
    'fspl-junk.fspl': Buffer.from('this is not a packet at all, not even close\n'),
    'fspl-empty.fspl': Buffer.alloc(0),
    'fspl-bad-tag.fspl': v('bad-tag.fspl'),
    'fspl-bad-version.fspl': v('bad-version.fspl'),
    'fspl-bad-prefix-crc.fspl': v('bad-prefix-crc.fspl'),
    'fspl-bad-meta-crc.fspl': v('bad-meta-crc.fspl'),
    'fspl-truncated-prefix.fspl': v('truncated-prefix.fspl'),
    'fspl-truncated-meta.fspl': v('truncated-meta.fspl'),
  };
}

const SEQS = ['0', '1', '2', '5', '8', '9007199254740993', '123456789012345678', U64_MAX];

describeCompat(
  'queue-ls, queue-info, queue-payload, queue-get-next and stdin-info',
  () => {
    let root: string;
    let q: string;

    beforeAll(async () => {
      root = tmpDirForSuite();
      q = path.join(root, 'q');
      const init = await fspl('ref', ['queue-init', '-q', q]);
      expect(init.code).toBe(0);
      for (const [name, data] of Object.entries(await listingJobs()))
        fs.writeFileSync(path.join(q, 'jobs', name), data);
      fs.mkdirSync(path.join(q, 'jobs', 'fspl-dir.fspl'));
      fs.mkdirSync(path.join(q, 'jobs', 'subdir'));
    });
    afterAll(() => {
      if (root) fs.rmSync(root, { recursive: true, force: true });
    });

    for (const tz of ZONES) {
      test(`queue-ls, TZ=${tz}`, async () => {
        const r = await both(['queue-ls', '-q', q], { tz });
        expect(r.ref.code).toBe(0);
        expect(r.ref.stdout.toString().split('\n').length).toBe(10); // header + 8 jobs + final newline
        expectSameOutput(r, `queue-ls TZ=${tz}`);
      });

      test(`queue-info -j for every job, TZ=${tz}`, async () => {
        for (const seq of SEQS) {
          const r = await both(['queue-info', '-q', q, '-j', seq], { tz });
          expect(r.ref.code, r.ref.stderr).toBe(0);
          expectSameOutput(r, `queue-info -j ${seq} TZ=${tz}`);
        }
      });

      test(`stdin-info on every golden vector, TZ=${tz}`, async () => {
        for (const name of listVectors().filter((f) => f.endsWith('.info'))) {
          const file = vector(name.replace(/\.info$/, '.fspl'));
          const r = await both(['stdin-info'], { tz, stdin: { file } });
          expect(r.ref.code).toBe(0);
          expectSameOutput(r, `stdin-info < ${name} TZ=${tz}`);
        }
      });
    }

    // Other zones: half-hour and 45-minute offsets, POSIX TZ strings, an unknown zone, empty TZ.
    for (const tz of [
      'Asia/Kolkata',
      'Pacific/Chatham',
      'EST5EDT',
      ':America/Chicago',
      'UTC-3:30',
      'CET-1CEST,M3.5.0,M10.5.0/3',
      'Nonsense/Zone',
      '',
    ]) {
      test(`queue-ls, TZ=${JSON.stringify(tz)}`, async () => {
        const r = await both(['queue-ls', '-q', q], { tz });
        expect(r.ref.code).toBe(0);
        expectSameOutput(r, `queue-ls TZ=${JSON.stringify(tz)}`);
      });
    }

    test('queue-info: FSPL_JOB_QUEUEDIR and FSPL_JOB_FULLPATH use -q verbatim (q/, ./q, absolute)', async () => {
      for (const [cwd, dir] of [
        [root, 'q/'],
        [root, './q'],
        [root, q],
        [path.join(q, 'jobs'), '..'],
      ] as const) {
        const r = await both(['queue-info', '-q', dir, '-j', '2'], { cwd, tz: 'America/Chicago' });
        expect(r.ref.code).toBe(0);
        expectSameOutput(r, `queue-info -q ${dir}`);
      }
    });

    test('queue-payload -j for every job', async () => {
      for (const seq of SEQS) {
        const r = await both(['queue-payload', '-q', q, '-j', seq]);
        expect(r.ref.code).toBe(0);
        expectSameOutput(r, `queue-payload -j ${seq}`);
      }
    });

    test('option forms: --queuedir=, -qDIR, --job=, leading + and zeros in -j', async () => {
      for (const args of [
        ['queue-ls', `--queuedir=${q}`],
        ['queue-info', `-q${q}`, '-j+2'],
        ['queue-info', '--queuedir', q, '--job=0002'],
        ['queue-payload', '-q', q, '-j', '+005'],
      ]) {
        const r = await both(args);
        expect(r.ref.code, r.ref.stderr).toBe(0);
        expectSameOutput(r, args.join(' '));
      }
    });

    test('queue-get-next and queue-set-next', async () => {
      const dir = tmpDir();
      for (const impl of ['ref', 'ours'] as const) {
        const init = await fspl(impl, ['queue-init', '-q', path.join(dir, impl)]);
        expect(init.code, init.stderr).toBe(0);
      }
      const get = () => both(['queue-get-next', '-q', '.'], (impl) => ({ cwd: path.join(dir, impl) }));
      let r = await get();
      expect(r.ref.stdout.toString()).toBe('1\n');
      expectSameOutput(r, 'queue-get-next on a new queue');
      for (const value of ['42', '+0007', '9007199254740993', U64_MAX, '0']) {
        const set = await both(['queue-set-next', '-q', '.', value], (impl) => ({ cwd: path.join(dir, impl) }));
        expectSameOutput(set, `queue-set-next ${value}`);
        expect(
          fs.readFileSync(path.join(dir, 'ours', 'nextseq'), 'latin1'),
          `nextseq after queue-set-next ${value}`,
        ).toBe(fs.readFileSync(path.join(dir, 'ref', 'nextseq'), 'latin1'));
        r = await get();
        expectSameOutput(r, `queue-get-next after queue-set-next ${value}`);
      }
      // nextseq missing but the lock file there: both create it holding 1
      for (const impl of ['ref', 'ours'] as const) fs.rmSync(path.join(dir, impl, 'nextseq'));
      r = await get();
      expect(r.ref.stdout.toString()).toBe('1\n');
      expectSameOutput(r, 'queue-get-next with nextseq missing');
      expect(fs.readFileSync(path.join(dir, 'ours', 'nextseq'), 'latin1')).toBe(
        fs.readFileSync(path.join(dir, 'ref', 'nextseq'), 'latin1'),
      );
      // nextseq in the lenient forms the reader accepts
      for (const content of [' 17\n', '17', '+017\r\n', '17\n18\n']) {
        for (const impl of ['ref', 'ours'] as const) fs.writeFileSync(path.join(dir, impl, 'nextseq'), content);
        r = await get();
        expect(r.ref.stdout.toString()).toBe('17\n');
        expectSameOutput(r, `queue-get-next with nextseq ${JSON.stringify(content)}`);
      }
    });

    test('queue-ls on an empty queue', async () => {
      const dir = tmpDir();
      await fspl('ref', ['queue-init', '-q', path.join(dir, 'q')]);
      const r = await both(['queue-ls', '-q', path.join(dir, 'q')]);
      expect(r.ref.stdout.toString()).toBe(`${'ID'.padEnd(20)} ${'creation timestamp'.padEnd(27)} filename\n`);
      expectSameOutput(r, 'queue-ls on an empty queue');
    });

    test('queue-ls on an append-only queue with only junk', async () => {
      const dir = tmpDir();
      await fspl('ref', ['queue-init', '--append-only', '-q', path.join(dir, 'q')]);
      fs.writeFileSync(path.join(dir, 'q', 'jobs', 'fspl-junk.fspl'), 'junk');
      fs.writeFileSync(path.join(dir, 'q', 'jobs', 'readme'), 'x');
      const r = await both(['queue-ls', '-q', path.join(dir, 'q')]);
      expect(r.ref.code).toBe(0);
      expectSameOutput(r, 'queue-ls with only junk');
    });

    test('queue-ls with duplicate sequence numbers: ties in directory (readdir) order', async () => {
      const dir = tmpDir();
      const qd = path.join(dir, 'q');
      await fspl('ref', ['queue-init', '-q', qd]);
      for (const [i, time] of ['2030-01-02 03:04:05', '2030-05-06 07:08:09', '2031-01-01 00:00:00'].entries()) {
        fs.writeFileSync(
          path.join(qd, 'jobs', `fspl-dup${i}.fspl`),
          await makePacket('ref', { seq: 3, payload: `dup ${i}`, time }),
        );
      }
      fs.writeFileSync(path.join(qd, 'jobs', 'fspl-two.fspl'), await makePacket('ref', { seq: 2, kind: 'nop' }));
      arrangeReaddirNotSorted(path.join(qd, 'jobs'), (c) => c.toString('latin1').includes('dup '));
      for (const tz of ZONES) {
        const r = await both(['queue-ls', '-q', qd], { tz });
        expectSameOutput(r, `queue-ls with duplicates TZ=${tz}`);
      }
    });

    test('stdin-info reads only the header: trailing data and a 300 kB payload', async () => {
      const packet = fs.readFileSync(path.join(q, 'jobs', 'fspl-big.fspl'));
      const r = await both(['stdin-info'], {
        stdin: Buffer.concat([packet, Buffer.from('trailing')]),
        tz: 'America/Chicago',
      });
      expect(r.ref.code).toBe(0);
      expectSameOutput(r, 'stdin-info of a big packet');
      const p = await both(['stdin-payload'], { stdin: packet });
      expect(sha256(p.ours.stdout)).toBe(sha256(p.ref.stdout));
    });
  },
  { vectors: true },
);
