/**
 * A firing's inputs (src/net/run/inputs.ts): a token of a signed place, judged when the run
 * indexed it, is judged again on the descriptor its firing opens, header and payload. The hook
 * is deterministic: an earlier firing's command (one worker) replaces the next token's file under
 * the same name, after the scan judged it and before its own firing opens it. The forgery (a
 * packet signed by an unknown key; the honest signed header with another payload) never reaches a
 * command or a move's output, is set aside as refused, and the net goes on: the honest token put
 * back fires, and an and-merge's other input is given back, never consumed with half its set.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Net, preparePacket } from 'filespooler';
import { expect, test } from 'vitest';
import { createLogger } from '../../../src/base/log.js';
import { describeIfPresent } from '../../gate.js';
import { onPath, waitFor } from '../../harness/proc.js';
import { makeNet, netDir, tokensIn } from '../helpers.js';

function makeKey(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', path.basename(file), '-f', file]);
  if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
}

const jobsOf = (dir: string) =>
  fs
    .readdirSync(path.join(dir, 'jobs'))
    .filter((n) => /^fspl-.*\.fspl$/.test(n))
    .sort();

/** Keys alice (allowed) and mallory (not), and the allowed_signers file naming alice. */
function keys(dir: string): { alice: string; mallory: string } {
  const alice = path.join(dir, 'keys/alice');
  const mallory = path.join(dir, 'keys/mallory');
  makeKey(alice);
  makeKey(mallory);
  fs.writeFileSync(path.join(dir, 'allowed'), `alice ${fs.readFileSync(`${alice}.pub`, 'utf8')}`);
  return { alice, mallory };
}

/** A packet signed by mallory, numbered and keyed as the token it replaces, written outside any place. */
async function forgeByMallory(file: string, mallory: string, seq: bigint, key: string, payload: string): Promise<void> {
  await pipeline(
    preparePacket({ seq, env: { KEY: key }, payload: Buffer.from(payload), sign: { key: mallory } }),
    fs.createWriteStream(file),
  );
}

/** An honest signed token with its payload changed (same length: only its SHA-512 tells). */
function withPayloadChanged(token: string, file: string): void {
  const bytes = Buffer.from(fs.readFileSync(token));
  bytes.write('EVIL', bytes.length - 5);
  fs.writeFileSync(file, bytes);
}

/**
 * A run kept going through the test's steps (a new run would judge a forgery at its scan, not at its firing); its
 * warnings kept.
 */
function running(net: Net): {
  until(what: string, cond: () => boolean): Promise<unknown>;
  stop(): Promise<unknown>;
  warnings: string[];
  events: string[];
} {
  const warnings: string[] = [];
  const recent: string[] = [];
  const events: string[] = [];
  const abort = new AbortController();
  const run = net.run({
    signal: abort.signal,
    pollInterval: 0.05,
    // Warnings for the assertions; the last debug lines too, said if a wait times out.
    logger: createLogger('debug', (line) => {
      if (/^\s*(WARN|ERROR) /.test(line)) warnings.push(line);
      recent.push(line);
      if (recent.length > 300) recent.shift();
    }),
    onEvent: (e) => events.push(e.type),
  });
  let failed: unknown;
  run.catch((err) => (failed = err));
  return {
    // On a timeout, what the run said and did so far: enough to tell a race from a hang.
    until: (what, cond) =>
      waitFor(
        what,
        () => {
          if (failed) throw failed;
          return cond();
        },
        30_000,
        50,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; events: ${events.join(' ')}; the run's last lines:\n${recent.join('')}`);
      }),
    stop: () => {
      abort.abort();
      return run;
    },
    warnings,
    events,
  };
}

/** Run until `until` holds, then stop; the run's warnings. */
async function runUntil(net: Net, what: string, until: () => boolean): Promise<string[]> {
  const run = running(net);
  try {
    await run.until(what, until);
  } finally {
    await run.stop();
  }
  return run.warnings;
}

const AT_FIRING = /judged again as its firing opened it/;

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

describeIfPresent(
  'signed tokens judged again as their firing opens them',
  onPath('ssh-keygen') ? [] : ['ssh-keygen (apt-get install openssh-client)'],
  { what: 'signed net tests' },
  () => {
    test(
      'a token replaced after its scan never reaches its command: set ' +
        'aside as refused; the honest ones, and the real one put back, fire',
      async () => {
        const { dir, net } = makeNet(
          'places:\n  src: { signers: allowed }\n  done: {}\ntransitions:\n' +
            '  up: { in: src, run: "sh swap.sh", out: done, workers: 1 }\n',
          {
            'swap.sh': '',
          },
        );
        const { alice, mallory } = keys(dir);
        const src = path.join(dir, 'places/src');
        for (let i = 1; i <= 4; i++) await net.put('src', Buffer.from(`token ${i}\n`), { key: `k${i}`, sign: alice });
        const [t1, t2, t3] = jobsOf(src).map((n) => path.join(src, 'jobs', n));
        // Token 1 writable by others: its checked payload reaches the command through a spool of ours.
        fs.chmodSync(t1!, 0o666);
        // Token 1's firing swaps tokens 2 and 3 for forgeries under their names; the real ones are kept.
        fs.copyFileSync(t2!, path.join(dir, 'real2'));
        fs.copyFileSync(t3!, path.join(dir, 'real3'));
        await forgeByMallory(path.join(dir, 'forged2'), mallory, 2n, 'k2', 'mallory\n');
        withPayloadChanged(t3!, path.join(dir, 'forged3'));
        fs.writeFileSync(
          path.join(dir, 'swap.sh'),
          `if [ "$FSPL_SEQ" = 1 ]; then mv ${sh(path.join(dir, 'forged2'))} ${sh(t2!)}` +
            `; mv ${sh(path.join(dir, 'forged3'))} ${sh(t3!)}; fi\ntr a-z A-Z\n`,
        );
        const aside = path.join(dir, 'net.state/set-aside');
        const done = path.join(dir, 'places/done');
        const payloads = async (where: string) => (await tokensIn(where)).map((t) => t.payload);
        const run = running(net);
        try {
          await run.until(
            'token 1 done, forgery 2 set aside',
            () => fs.existsSync(path.join(aside, 'jobs')) && jobsOf(aside).length === 1 && jobsOf(done).length === 1,
          );
          // A sequence place: the forgery, gone from it, took no number, so 3 and 4 wait for the real 2.
          expect(await payloads(done)).toEqual(['TOKEN 1\n']);
          expect(jobsOf(src)).toEqual([path.basename(t3!), expect.stringMatching(/^fspl-0*4-/)]);
          // The net goes on: the real 2 put back under its name fires; then 3, a forgery since its scan, is refused as
          // it opens.
          fs.copyFileSync(path.join(dir, 'real2'), t2!);
          await run.until(
            'token 2 done, forgery 3 set aside',
            () => jobsOf(aside).length === 2 && jobsOf(done).length === 2,
          );
          fs.copyFileSync(path.join(dir, 'real3'), t3!);
          await run.until('all four done', () => jobsOf(done).length === 4);
        } finally {
          await run.stop();
        }
        // Both refused by the firing's check, not a scan's (the run indexed each before its swap).
        expect(run.warnings.filter((w) => AT_FIRING.test(w))).toEqual([
          expect.stringMatching(/packet 2 refused/),
          expect.stringMatching(/packet 3 refused/),
        ]);
        expect((await tokensIn(done)).map((t) => [t.key, t.payload])).toEqual(
          [1, 2, 3, 4].map((i) => [`k${i}`, `TOKEN ${i}\n`]),
        );
        expect(jobsOf(src)).toEqual([]);
        const refused = await tokensIn(aside);
        expect(refused.map((t) => [t.env.SET_ASIDE_FILE, t.env.SET_ASIDE_PLACE, t.payload])).toEqual([
          [path.basename(t2!), 'src', 'mallory\n'],
          [path.basename(t3!), 'src', 'tokEVIL\n'],
        ]);
        expect(refused[0]!.env.SET_ASIDE_REASON).toMatch(/^packet 2 refused: signed by a key not in .*allowed/);
        expect(refused[1]!.env.SET_ASIDE_REASON).toMatch(/^packet 3 refused: payload does not match its signature/);
        expect((await net.status()).places.find((p) => p.name === 'src')!.refused).toBe(2);
      },
    );

    test(
      'three workers: firings started on later numbers do not ' +
        'commit past the refused one, and fire again after the real one',
      async () => {
        // Held by `pause` until the run has indexed (and judged) 1 to 4; then 2 is swapped, and 1, 2
        // and 3 start together: 2 is refused as it opens, 3 runs, and 1 ends only once 3 has run, so
        // 2's refusal comes (in its commit turn, after 1) while 3 waits to commit behind it.
        const { dir, net } = makeNet(
          'places:\n  pause: {}\n  src: { signers: allowed }\n  done: {}\ntransitions:\n' +
            '  up: { in: src, run: "sh step.sh", out: done, workers: 3, inhibit: [pause] }\n',
          {
            'step.sh':
              'case "$FSPL_SEQ" in\n1) while [ ! -e ran3 ]; do sleep 0.05; done ;;\n' +
              '3) touch ran3 ;;\nesac\ntr a-z A-Z\n',
          },
        );
        const { alice } = keys(dir);
        const src = path.join(dir, 'places/src');
        const done = path.join(dir, 'places/done');
        await net.put('pause', Buffer.from(''), { key: 'p' });
        for (let i = 1; i <= 4; i++) await net.put('src', Buffer.from(`token ${i}\n`), { key: `k${i}`, sign: alice });
        const t2 = path.join(src, 'jobs', jobsOf(src)[1]!);
        fs.copyFileSync(t2, path.join(dir, 'real2'));
        withPayloadChanged(t2, path.join(dir, 'forged2'));
        const run = running(net);
        try {
          await run.until('the run indexed the tokens, paused', () => run.events.includes('idle'));
          fs.renameSync(path.join(dir, 'forged2'), t2);
          for (const n of jobsOf(path.join(dir, 'places/pause'))) fs.unlinkSync(path.join(dir, 'places/pause/jobs', n));
          await run.until('1 done, forgery 2 set aside, 3 dropped', () =>
            run.warnings.some((w) =>
              /up: 1 firing\(s\) on later tokens of place src are dropped: number 2 is still to come/.test(w),
            ),
          );
          await run.until('1 done', () => jobsOf(done).length === 1);
          // The place still waits for number 2: 3 and 4 are there, untaken.
          expect(jobsOf(src)).toEqual([expect.stringMatching(/^fspl-0*3-/), expect.stringMatching(/^fspl-0*4-/)]);
          fs.copyFileSync(path.join(dir, 'real2'), t2);
          await run.until('all four done', () => jobsOf(done).length === 4);
        } finally {
          await run.stop();
        }
        expect((await tokensIn(done)).map((t) => [t.key, t.payload])).toEqual(
          [1, 2, 3, 4].map((i) => [`k${i}`, `TOKEN ${i}\n`]),
        );
        expect(run.warnings.filter((w) => AT_FIRING.test(w))).toEqual([
          expect.stringMatching(/packet 2 refused: payload does not match its signature/),
        ]);
      },
    );

    test(
      'a batch: signed tokens concatenated as checked; one swapped ' +
        'for a forgery stops its batch, whose other token goes back',
      async () => {
        const { dir, net } = makeNet(
          'places:\n  src: { signers: allowed }\n  done: {}\ntransitions:\n' +
            '  b: { in: { place: src, take: 2 }, run: "sh b.sh", out: done, workers: 1 }\n',
          {
            'b.sh': '',
          },
        );
        const { alice, mallory } = keys(dir);
        const src = path.join(dir, 'places/src');
        const done = path.join(dir, 'places/done');
        for (let i = 1; i <= 4; i++) await net.put('src', Buffer.from(`token ${i}\n`), { key: `k${i}`, sign: alice });
        const [t1, , , t4] = jobsOf(src).map((n) => path.join(src, 'jobs', n));
        fs.chmodSync(t1!, 0o666); // read through a spool of ours
        fs.copyFileSync(t4!, path.join(dir, 'real4'));
        await forgeByMallory(path.join(dir, 'forged4'), mallory, 4n, 'k4', 'evil\n');
        fs.writeFileSync(
          path.join(dir, 'b.sh'),
          `if [ "$FSPL_BATCH_SEQS" = "1 2" ]; then mv forged4 ${sh(t4!)}; fi\ntr a-z A-Z\n`,
        );
        const run = running(net);
        try {
          await run.until(
            'batch 1 done, forgery 4 set aside',
            () =>
              jobsOf(done).length === 1 &&
              fs.existsSync(path.join(dir, 'net.state/set-aside/jobs')) &&
              jobsOf(path.join(dir, 'net.state/set-aside')).length === 1,
          );
          expect(jobsOf(src)).toEqual([expect.stringMatching(/^fspl-0*3-/)]); // 3 went back, untaken
          fs.copyFileSync(path.join(dir, 'real4'), t4!);
          await run.until('batch 2 done', () => jobsOf(done).length === 2);
        } finally {
          await run.stop();
        }
        expect((await tokensIn(done)).map((t) => t.payload)).toEqual(['TOKEN 1\nTOKEN 2\n', 'TOKEN 3\nTOKEN 4\n']);
        expect(run.warnings.filter((w) => AT_FIRING.test(w))).toEqual([
          expect.stringMatching(/packet 4 refused: signed by a key not in/),
        ]);
      },
    );

    test(
      "a failed firing's error token copies its input as " +
        'checked, not what was swapped in under its name meanwhile',
      async () => {
        const { dir, net } = makeNet(
          'places:\n  src: { signers: allowed }\n  done: {}\n  err: {}\n' +
            'transitions:\n  up: { in: src, run: "sh fail.sh", out: done, error: err }\n',
          {
            'fail.sh': '',
          },
        );
        const { alice } = keys(dir);
        const src = path.join(dir, 'places/src');
        await net.put('src', Buffer.from('honest\n'), { key: 'k', sign: alice });
        const [token] = jobsOf(src).map((n) => path.join(src, 'jobs', n));
        withPayloadChanged(token!, path.join(dir, 'forged'));
        // The command swaps its own token, already opened and checked, then fails.
        fs.writeFileSync(path.join(dir, 'fail.sh'), `mv forged ${sh(token!)}\ncat >/dev/null\nexit 3\n`);
        await runUntil(net, 'the error token', () => jobsOf(path.join(dir, 'places/err')).length === 1);
        const [e] = await tokensIn(path.join(dir, 'places/err'));
        expect([e!.key, e!.env.ERROR_REASON, e!.payload]).toEqual(['k', 'exited with status 3', 'honest\n']);
        expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
      },
    );

    for (const kind of ['command', 'move'] as const) {
      test(
        `an and-merge (${kind}) whose signed input is replaced before it fires: ` +
          `nothing runs, its other input goes back, and fires with the real one`,
        async () => {
          const merge = kind === 'command' ? `run: 'touch ran; cat "$FSPL_IN_go" "$FSPL_IN_src"', ` : '';
          const { dir, net } = makeNet(
            `places:\n  trigger: {}\n  go: {}\n  src: { signers: allowed }\n  done: {}\ntransitions:\n` +
              `  swap: { in: trigger, run: "sh swap.sh", out: go }\n` +
              `  pair: { in: [go, src], ${merge}out: done, cwd: . }\n`,
            { 'swap.sh': '' },
          );
          const { alice } = keys(dir);
          const src = path.join(dir, 'places/src');
          await net.put('src', Buffer.from('honest\n'), { key: 'k', sign: alice });
          const [token] = jobsOf(src).map((n) => path.join(src, 'jobs', n));
          fs.copyFileSync(token!, path.join(dir, 'real'));
          withPayloadChanged(token!, path.join(dir, 'forged'));
          // swap fires first (pair waits for go's token): it replaces src's token, already judged, then feeds go.
          fs.writeFileSync(path.join(dir, 'swap.sh'), `mv ${sh(path.join(dir, 'forged'))} ${sh(token!)}\ncat\n`);
          await net.put('trigger', Buffer.from('go\n'), { key: 'k' });
          const aside = path.join(dir, 'net.state/set-aside');
          const warnings = await runUntil(
            net,
            'the forgery set aside',
            () => fs.existsSync(path.join(aside, 'jobs')) && jobsOf(aside).length === 1,
          );
          expect(warnings.filter((w) => AT_FIRING.test(w))).toEqual([
            expect.stringMatching(/packet 1 refused: payload does not match its signature/),
          ]);
          expect((await tokensIn(aside)).map((t) => t.payload)).toEqual(['hoEVIL\n']);
          expect(fs.existsSync(path.join(dir, 'ran'))).toBe(false);
          expect(jobsOf(path.join(dir, 'places/done'))).toEqual([]);
          // go's token given back, not consumed with half its set.
          expect((await tokensIn(path.join(dir, 'places/go'))).map((t) => [t.key, t.payload])).toEqual([['k', 'go\n']]);
          fs.copyFileSync(path.join(dir, 'real'), token!);
          await runUntil(net, 'the pair done', () => jobsOf(path.join(dir, 'places/done')).length === 1);
          expect((await tokensIn(path.join(dir, 'places/done'))).map((t) => [t.key, t.payload])).toEqual([
            ['k', 'go\nhonest\n'],
          ]);
          expect(jobsOf(path.join(dir, 'places/go'))).toEqual([]);
          expect(jobsOf(src)).toEqual([]);
        },
      );
    }

    test(
      'a JavaScript transition reads what was checked (small tokens ' +
        'whole, a large one streamed, twice); a forgery swapped in is refused',
      async () => {
        const dir = netDir();
        const { alice, mallory } = keys(dir);
        const define = (fn: Parameters<typeof Net.define>[0]['transitions'][string]['fn']) =>
          Net.define({
            dir,
            places: { a: { signers: path.join(dir, 'allowed') }, b: {} },
            transitions: { t: { in: 'a', out: 'b', workers: 1, fn } },
          });
        const big = 'x'.repeat(300 * 1024);
        const put = define(async () => undefined);
        put.init();
        for (const [i, text] of [
          [1, 'one'],
          [2, 'two'],
          [3, big],
        ] as const)
          await put.put('a', Buffer.from(text), { key: `k${i}`, sign: alice });
        const a = path.join(dir, 'places/a');
        const [t1, t2, t3] = jobsOf(a).map((n) => path.join(a, 'jobs', n));
        fs.chmodSync(t1!, 0o666); // read through a spool of ours
        fs.chmodSync(t3!, 0o666);
        fs.copyFileSync(t2!, path.join(dir, 'real2'));
        await forgeByMallory(path.join(dir, 'forged2'), mallory, 2n, 'k2', 'evil');
        const text = async (r: AsyncIterable<Buffer>) => {
          let out = '';
          for await (const c of r) out += c.toString();
          return out;
        };
        const js = define(async (ctx) => {
          const input = ctx.inputs[0]!;
          if (input.seq === 1n) fs.renameSync(path.join(dir, 'forged2'), t2!);
          const first = await text(input.payload());
          const again = await text(input.payload());
          return first === again ? `${input.env.KEY}:${first.length}:${first.slice(0, 5)}` : 'two reads differ';
        });
        const run = running(js);
        try {
          await run.until(
            '1 done, the forgery set aside',
            () =>
              fs.existsSync(path.join(dir, 'net.state/set-aside/jobs')) &&
              jobsOf(path.join(dir, 'net.state/set-aside')).length === 1,
          );
          fs.copyFileSync(path.join(dir, 'real2'), t2!);
          await run.until('all three done', () => jobsOf(path.join(dir, 'places/b')).length === 3);
        } finally {
          await run.stop();
        }
        expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual([
          'k1:3:one',
          'k2:3:two',
          `k3:${big.length}:xxxxx`,
        ]);
        expect(run.warnings.filter((w) => AT_FIRING.test(w))).toEqual([
          expect.stringMatching(/packet 2 refused: signed by a key not in/),
        ]);
        expect((await tokensIn(path.join(dir, 'net.state/set-aside'))).map((t) => t.payload)).toEqual(['evil']);
      },
    );

    test(
      'another packet validly signed for the number: it runs whole (its ' +
        'variables with its payload), unless its key differs from the indexed one',
      async () => {
        const { dir, net } = makeNet(
          'places:\n  src: { signers: allowed }\n  done: {}\ntransitions:\n' +
            '  up: { in: src, run: "sh swap.sh", out: done, workers: 1 }\n',
          {
            'swap.sh': '',
          },
        );
        const { alice } = keys(dir);
        const src = path.join(dir, 'places/src');
        for (let i = 1; i <= 3; i++)
          await net.put('src', Buffer.from(`token ${i}`), { key: `k${i}`, env: { WHO: 'first' }, sign: alice });
        const [, t2, t3] = jobsOf(src).map((n) => path.join(src, 'jobs', n));
        fs.copyFileSync(t3!, path.join(dir, 'real3'));
        const signed = (file: string, seq: bigint, key: string, payload: string) =>
          pipeline(
            preparePacket({
              seq,
              env: { KEY: key, WHO: 'second' },
              payload: Buffer.from(payload),
              sign: { key: alice },
            }),
            fs.createWriteStream(file),
          );
        await signed(path.join(dir, 'other2'), 2n, 'k2', 'other 2');
        await signed(path.join(dir, 'other3'), 3n, 'elsewhere', 'other 3');
        fs.writeFileSync(
          path.join(dir, 'swap.sh'),
          `if [ "$FSPL_SEQ" = 1 ]; then mv ${sh(path.join(dir, 'other2'))} ${sh(t2!)}; mv ` +
            `${sh(path.join(dir, 'other3'))} ${sh(t3!)}; fi\nprintf '%s: %s' "$FSPL_SET_WHO" "$(cat)"\n`,
        );
        const done = path.join(dir, 'places/done');
        const aside = path.join(dir, 'net.state/set-aside');
        const run = running(net);
        try {
          await run.until(
            '2 done, 3 set aside',
            () => jobsOf(done).length === 2 && fs.existsSync(path.join(aside, 'jobs')) && jobsOf(aside).length === 1,
          );
          fs.copyFileSync(path.join(dir, 'real3'), t3!);
          await run.until('3 done', () => jobsOf(done).length === 3);
        } finally {
          await run.stop();
        }
        expect((await tokensIn(done)).map((t) => t.payload)).toEqual([
          'first: token 1',
          'second: other 2',
          'first: token 3',
        ]);
        expect((await tokensIn(aside)).map((t) => t.env.SET_ASIDE_REASON)).toEqual([
          expect.stringMatching(/^packet 3 refused: its key changed since it was indexed/),
        ]);
      },
    );
  },
);
