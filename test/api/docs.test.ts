/**
 * Every ```js example in docs/api.md, run as written: each becomes an .mjs file inside the
 * project (so that `import ... from 'filespooler'` resolves to this package, as it would for a
 * user) and must exit 0. Its output is checked against what the page says it shows.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers.js';

const page = fs.readFileSync(path.join(ROOT, 'docs', 'api.md'), 'utf8');
const examples = [...page.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!);
const scratch = path.join(ROOT, 'test', 'api', '.examples');

function run(code: string, n: number): string {
  fs.mkdirSync(scratch, { recursive: true });
  const file = path.join(scratch, `example-${n}.mjs`);
  fs.writeFileSync(file, code);
  return execFileSync(process.execPath, [file], {
    encoding: 'utf8',
    timeout: 30_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** What each example must print, in page order. */
const expected: Array<(out: string) => void> = [
  (out) => expect(out).toBe("1n Command [ '--verbose' ] [ 'HOST=web1' ]\n2n NOP\n"),
  (out) => expect(out).toBe('2n packet 2 refused: not signed\n1n alice@example\ntrue ERR_SIGNATURE\n'),
  (out) => expect(out).toBe('true true streamed payload\ntrue ERR_BAD_PACKET\n'),
  (out) => expect(out).toBe('7n true\n'),
  (out) => expect(out).toBe('1n alpha alpha\n2n beta beta\n3n gamma gamma\n2 beta true\nnext to process: 1n\n'),
  (out) => {
    const lines = out.trim().split('\n');
    expect(lines.slice(0, 3).map((l) => l.split(' ')[0])).toEqual(['1n', '2n', '3n']);
    expect(lines[3]).toBe('true ERR_JOB_FAILED');
    expect(lines[4]).toBe('undefined next: 3n');
    expect(lines[5]).toBe('job 4: four');
    expect(lines[6]).toBe('{ processed: 1, succeeded: 1, failed: 0 }');
  },
  (out) => expect(out).toBe('{ processed: 3, succeeded: 3, failed: 0 } [ 1n, 2n, 3n ]\n'),
  (out) => {
    // Turns: each queue's first job before any queue's second; bob stops at its failed job 2.
    expect(out).toBe(
      'alice 1n hello\nbob 1n hello\ncarol 1n hello\nalice 2n again\ncarol 2n again\n' +
        'alice done 2 \nbob stopped 2 Job 2 failed (function failed: bob ' +
        'is busy); stopping, the job stays in the queue\ncarol done 2 \n',
    );
  },
  (out) =>
    expect(out).toBe(
      'ERR_NOT_FOUND - Job 99 not found in queue "' +
        out.split('"')[1] +
        '"\nERR_SHORT_READ - Input ends within the packet header, after 12 bytes (cut short in transit?)\n' +
        'ERR_DUPLICATE_SEQ - More than one job has sequence number 1\n',
    ),
];

describe('README.md library example', () => {
  it('runs as written, with a payload on stdin', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const code = /## The library[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)![1]!;
    fs.mkdirSync(scratch, { recursive: true });
    const file = path.join(scratch, 'readme.mjs');
    fs.writeFileSync(file, code);
    const cwd = tempDir();
    const out = execFileSync(process.execPath, [file], { cwd, input: 'hello\n', encoding: 'utf8', timeout: 30_000 });
    expect(out).toMatch(
      new RegExp(
        /^1n fspl-[0-9a-f-]{36}\.fspl Command\njob 1 for world: /.source +
          /b1946ac92492d2347c6235b4d2611184\n\{ processed: 1, succeeded: 1, failed: 0 \}\n$/.source,
      ),
    );
  });
});

describe('docs/api.md examples', () => {
  it('has one expectation per example', () => {
    expect(examples.length).toBe(expected.length);
  });
  examples.forEach((code, i) => {
    it(`example ${i + 1} runs and prints what the page says`, () => {
      expected[i]!(run(code, i + 1));
    });
  });
});
