/**
 * Golden vectors (test/fixtures/vectors, written by the reference): stdin-info and stdin-payload reproduce the
 * recorded outputs, damaged packets are refused with exit 1, and packets we make equal the golden ones.
 */
import fs from 'node:fs';
import { expect, test } from 'vitest';
import {
  both,
  describeCompat,
  expectBytes,
  expectRuntimeError,
  fspl,
  type JobSpec,
  listVectors,
  makePacket,
  T0,
  tmpDir,
  vector,
} from './harness.js';

const vectors = listVectors();
const good = vectors.filter((f) => f.endsWith('.info')).map((f) => f.slice(0, -'.info'.length));
const damaged = vectors.filter((f) => f.endsWith('.fspl') && !vectors.includes(f.replace(/\.fspl$/, '.info')));

describeCompat(
  'golden vectors',
  () => {
    test('the vector set is there', () => {
      expect(good.length).toBeGreaterThanOrEqual(11);
      expect(damaged.length).toBeGreaterThanOrEqual(7);
    });

    for (const name of good) {
      test(`${name}: stdin-info (TZ=UTC) equals ${name}.info, stdin-payload equals ${name}.payload`, async () => {
        const stdin = { file: vector(`${name}.fspl`) };
        const [info, payload] = await Promise.all([
          both(['stdin-info'], { stdin }),
          both(['stdin-payload'], { stdin }),
        ]);
        const wantInfo = fs.readFileSync(vector(`${name}.info`));
        const wantPayload = fs.readFileSync(vector(`${name}.payload`));
        for (const impl of ['ref', 'ours'] as const) {
          expect(info[impl].code, `${impl} stdin-info exit status: ${info[impl].stderr}`).toBe(0);
          expectBytes(info[impl].stdout, wantInfo, `${impl} stdin-info < ${name}.fspl`);
          expect(payload[impl].code, `${impl} stdin-payload exit status: ${payload[impl].stderr}`).toBe(0);
          expectBytes(payload[impl].stdout, wantPayload, `${impl} stdin-payload < ${name}.fspl`);
        }
      });
    }

    for (const name of damaged) {
      test(`${name} is refused with exit 1 by stdin-info, stdin-payload and stdin-process`, async () => {
        const dir = tmpDir();
        const stdin = { file: vector(name) };
        for (const args of [['stdin-info'], ['stdin-payload'], ['stdin-process', 'true']]) {
          const r = await both(args, { stdin, cwd: dir });
          expectRuntimeError(r, `${args.join(' ')} < ${name}`);
        }
      });
    }

    test('damaged vectors through a pipe are refused too (stdin-info)', async () => {
      for (const name of damaged) {
        const r = await both(['stdin-info'], { stdin: fs.readFileSync(vector(name)) });
        expectRuntimeError(r, `stdin-info <pipe> ${name}`);
      }
    });

    // Packets made with `-s -` under the frozen clock: ours must equal the golden bytes.
    const made: Array<[string, JobSpec]> = [
      ['nop.fspl', { seq: 1, kind: 'nop' }],
      ['fail.fspl', { seq: 1, kind: 'fail' }],
      ['command-bare.fspl', { seq: 1 }],
      ['command-params-payload.fspl', { seq: 1, params: ['one', 'two words'], payload: 'hello\n' }],
      ['command-200-params.fspl', { seq: 1, params: Array.from({ length: 200 }, (_, i) => String(i + 1)) }],
      ['seq-2pow53-plus-1.fspl', { seq: '9007199254740993', kind: 'nop' }],
      ['ctime-year-2150.fspl', { seq: 1, kind: 'nop', time: '2150-01-01 00:00:00' }],
    ];
    for (const [file, spec] of made) {
      test(`our prepare reproduces ${file}`, async () => {
        if (
          file === 'command-bare.fspl' ||
          file === 'command-200-params.fspl' ||
          file === 'command-params-payload.fspl'
        ) {
          // made with -s -: check that path too
          const args = [
            'prepare',
            '-s',
            '-',
            ...(spec.payload !== undefined ? ['-i', '-'] : []),
            '--',
            ...(spec.params ?? []),
          ];
          const r = await fspl('ours', args, {
            frozen: T0,
            stdin: spec.payload !== undefined ? Buffer.from(spec.payload) : undefined,
            cwd: tmpDir(),
          });
          expect(r.code, r.stderr).toBe(0);
          expectBytes(r.stdout, fs.readFileSync(vector(file)), file);
          return;
        }
        const packet = await makePacket('ours', spec);
        expectBytes(packet, fs.readFileSync(vector(file)), file);
      });
    }
  },
  { vectors: true },
);
