/**
 * Cross-reading: packets written by each implementation are read by the other one (stdin-info,
 * stdin-payload, stdin-process), and the output is the same as when the writer reads its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import {
  describeCompat,
  executorErrLines,
  expectBytes,
  fspl,
  type Impl,
  type JobSpec,
  makePacket,
  type RunResult,
  readIf,
  tmpDir,
  writeExecutor,
} from './harness.js';

const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));

const packets: Array<[string, JobSpec]> = [
  ['NOP', { seq: 1, kind: 'nop' }],
  ['Fail', { seq: 2, kind: 'fail' }],
  ['bare command', { seq: 3 }],
  ['params and a binary payload', { seq: 4, params: ['one', 'two words', '', 'é€😀'], payload: binary }],
  [
    'FSPL_SET_ variables',
    {
      seq: 5,
      params: ['p'],
      env: { FOO: 'bar', MULTI: 'line1\nline2', EMPTY: '', UNI: 'é€😀', A: '1=2' },
      payload: 'some payload\n',
    },
  ],
  ['200 params', { seq: 6, params: Array.from({ length: 200 }, (_, i) => `param${i + 1}`) }],
  ['seq 2^53+1', { seq: '9007199254740993', params: ['big'], payload: 'x' }],
  ['ctime in 2150', { seq: 7, time: '2150-01-01 00:00:00', payload: 'far\n' }],
  ['ctime in July (DST)', { seq: 8, time: '2030-07-02 03:04:05', env: { X: 'y' } }],
];

/** A reader's view of one packet. */
interface Reading {
  infoUtc: RunResult;
  infoChicago: RunResult;
  payload: RunResult;
  process: RunResult & { log: string };
  processAllow: RunResult & { log: string };
}

async function read(reader: Impl, packet: Buffer, root: string): Promise<Reading> {
  const dir = path.join(root, `${reader}-reads`);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'packet.fspl');
  fs.writeFileSync(file, packet);
  const exec = writeExecutor(root);
  const outerEnv = {
    MYVAR: 'inherited',
    FSPL_JOB_FILENAME: 'outer',
    FSPL_PARAM_9: 'stale',
    FSPL_SET_FOO: 'outer',
    FSPL_SEQ: '999',
  };
  const procDir = path.join(dir, 'p1');
  const allowDir = path.join(dir, 'p2');
  fs.mkdirSync(procDir);
  fs.mkdirSync(allowDir);
  const [infoUtc, infoChicago, payload, proc, procAllow] = await Promise.all([
    fspl(reader, ['stdin-info'], { stdin: { file } }),
    fspl(reader, ['stdin-info'], { stdin: packet, tz: 'America/Chicago' }),
    fspl(reader, ['stdin-payload'], { stdin: packet }),
    // stdin as a file descriptor: the command reads the payload from the same descriptor
    fspl(reader, ['stdin-process', exec, '--', 'cli1', 'cli 2'], { stdin: { file }, cwd: procDir, env: outerEnv }),
    // stdin as a pipe, job params allowed
    fspl(reader, ['stdin-process', '--allow-job-params', exec, '--', 'cli'], {
      stdin: packet,
      cwd: allowDir,
      tz: 'America/Chicago',
    }),
  ]);
  return {
    infoUtc,
    infoChicago,
    payload,
    process: { ...proc, log: readIf(path.join(procDir, 'log')) ?? '' },
    processAllow: { ...procAllow, log: readIf(path.join(allowDir, 'log')) ?? '' },
  };
}

function expectSameReading(actual: Reading, expected: Reading, what: string): void {
  for (const k of ['infoUtc', 'infoChicago', 'payload', 'process', 'processAllow'] as const) {
    const a = actual[k];
    const e = expected[k];
    expect(a.code, `${what}: ${k} exit status; stderr: ${a.stderr}`).toBe(e.code);
    expectBytes(a.stdout, e.stdout, `${what}: ${k} stdout`);
    if (k === 'process' || k === 'processAllow') {
      const ap = a as Reading['process'];
      const ep = e as Reading['process'];
      expect(ap.log, `${what}: ${k} executor log`).toBe(ep.log);
      expect(executorErrLines(ap.stderr), `${what}: ${k} executor stderr`).toEqual(executorErrLines(ep.stderr));
    }
  }
}

describeCompat('cross-reading packets between the implementations', () => {
  for (const [name, spec] of packets) {
    test(name, async () => {
      const root = tmpDir();
      const [byRef, byOurs] = await Promise.all([makePacket('ref', spec), makePacket('ours', spec)]);
      expectBytes(byOurs, byRef, 'the packets themselves');
      fs.mkdirSync(path.join(root, 'a'));
      fs.mkdirSync(path.join(root, 'b'));
      fs.mkdirSync(path.join(root, 'c'));
      const [refReadsRef, oursReadsRef, refReadsOurs] = await Promise.all([
        read('ref', byRef, path.join(root, 'a')),
        read('ours', byRef, path.join(root, 'b')),
        read('ref', byOurs, path.join(root, 'c')),
      ]);
      // sanity: the reference did what we think
      expect(refReadsRef.infoUtc.code).toBe(0);
      expect(refReadsRef.process.code).toBe(spec.kind === 'fail' ? 1 : 0);
      expectSameReading(oursReadsRef, refReadsRef, 'ours reading the reference packet');
      expectSameReading(refReadsOurs, refReadsRef, 'the reference reading our packet');
    });
  }

  test(
    'stdin-process: the payload is the rest of stdin, ' + 'after exactly the header (trailing data on a pipe)',
    async () => {
      const root = tmpDir();
      const packet = await makePacket('ref', { seq: 1, payload: 'abc' });
      const stdin = Buffer.concat([packet, Buffer.from('TRAILING')]);
      const exec = writeExecutor(root);
      const logs: Record<string, string> = {};
      for (const impl of ['ref', 'ours'] as const) {
        const cwd = path.join(root, impl);
        fs.mkdirSync(cwd);
        const r = await fspl(impl, ['stdin-process', exec], { stdin, cwd });
        expect(r.code, r.stderr).toBe(0);
        logs[impl] = readIf(path.join(cwd, 'log')) ?? '';
      }
      expect(logs.ours).toBe(logs.ref);
    },
  );

  test('stdin-process with a NOP packet and trailing bytes: nothing runs, exit 0', async () => {
    const root = tmpDir();
    const packet = await makePacket('ours', { seq: 1, kind: 'nop' });
    for (const impl of ['ref', 'ours'] as const) {
      const r = await fspl(impl, ['stdin-process', writeExecutor(root)], {
        stdin: Buffer.concat([packet, Buffer.from('junk')]),
        cwd: root,
      });
      expect(r.code, `${impl}: ${r.stderr}`).toBe(0);
      expect(r.stdout.length).toBe(0);
      expect(fs.existsSync(path.join(root, 'log'))).toBe(false);
    }
  });

  test('stdin-process: a failing command exits 1 in both', async () => {
    const root = tmpDir();
    const packet = await makePacket('ref', { seq: 1, env: { EXIT: '3' } });
    for (const impl of ['ref', 'ours'] as const) {
      const r = await fspl(impl, ['stdin-process', writeExecutor(root)], { stdin: packet, cwd: root });
      expect(r.code, `${impl}: ${r.stderr}`).toBe(1);
      expect(r.stdout.toString()).toBe('out:1\n');
      expect(stderrLast(r.stderr), `${impl} stderr`).toMatch(/^Error: /);
    }
  });

  test('stdin-process --timeout 1 kills a sleeping command: exit 1 in both', async () => {
    const root = tmpDir();
    const packet = await makePacket('ref', { seq: 1, env: { SLEEP: '10' } });
    const exec = writeExecutor(root);
    const rs = await Promise.all(
      (['ref', 'ours'] as const).map(async (impl) => {
        const cwd = path.join(root, impl);
        fs.mkdirSync(cwd);
        return fspl(impl, ['stdin-process', '--timeout', '1', exec], { stdin: packet, cwd });
      }),
    );
    for (const r of rs) expect(r.code, r.stderr).toBe(1);
    expect(readIf(path.join(root, 'ours', 'log'))).toBe(readIf(path.join(root, 'ref', 'log')));
  });
});

function stderrLast(s: string): string {
  const lines = s.split('\n').filter((l) => l !== '');
  return lines[lines.length - 1] ?? '';
}
