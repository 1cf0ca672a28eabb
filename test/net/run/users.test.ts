/**
 * A user per transition (as root): two transitions run as two users made for the test. Each can
 * read its input place and write its output place (net init --permissions: a place is owned by
 * its reader, its writers are its group); a command that writes elsewhere gets EACCES and its
 * token goes to the error place. net check warns when the places on disk break the rule.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { copyBuild } from '../../build-copy.js';
import { describeIfPresent } from '../../gate.js';
import { onPath } from '../../harness/proc.js';
import { makeNet, runFspl, tokensIn } from '../helpers.js';

const isRoot = process.getuid?.() === 0;
const missing = [
  ...(isRoot ? [] : ['root (run the tests as root)']),
  ...['useradd', 'userdel', 'getent', 'setpriv'].filter((c) => !onPath(c)),
];
const U1 = `fspltA${process.pid}`;
const U2 = `fspltB${process.pid}`;

describeIfPresent('transitions as users', missing, { what: 'per-transition user tests' }, () => {
  /** A copy of the CLI that the users made here can reach, wherever the checkout is. */
  let build = '';
  beforeAll(() => {
    for (const u of [U1, U2])
      execFileSync('useradd', ['--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', u]);
    build = copyBuild();
  });
  afterAll(() => {
    if (build !== '') fs.rmSync(build, { recursive: true, force: true });
    for (const u of [U1, U2]) {
      try {
        execFileSync('userdel', [u], { stdio: 'ignore' });
      } catch {
        // not created
      }
    }
  });

  test('each reads its input and writes its output; writing ' +
    'elsewhere is EACCES and goes to the error place', async () => {
    const { dir, file, net } = makeNet(
      `
places: { p1: {}, p2: {}, p3: {}, err: {} }
transitions:
  t1: { in: p1, user: ${U1}, run: "sh ./t1.sh", out: p2, error: err }
  t2: { in: p2, user: ${U2}, run: "sh ./t2.sh", out: p3 }
`,
      {
        't1.sh': `payload=$(cat)
ls places/p1/jobs >/dev/null || exit 2
test -w places/p2/jobs || { echo "cannot write p2" >&2; exit 3; }
if [ "$payload" = evil ]; then echo x > places/p3/jobs/evil || exit 4; fi
echo "t1:$(id -un):$payload"
`,
        't2.sh': `ls places/p2/jobs >/dev/null || exit 2
test -w places/p3/jobs || { echo "cannot write p3" >&2; exit 3; }
test -w places/p1/jobs && { echo "can write p1" >&2; exit 5; }
printf 't2:%s:' "$(id -un)"; cat
`,
      },
    );
    fs.chmodSync(dir, 0o755);
    const before = await runFspl(['net', 'check', file]);
    expect(before.stderr).toMatch(/warning: place p2: .* is owned by uid 0, not its reader's/);
    const init = await runFspl(['net', 'init', file, '--permissions']);
    expect(init.status).toBe(0);
    const uid = (u: string) => Number(execFileSync('id', ['-u', u], { encoding: 'utf8' }));
    const gid = (u: string) => Number(execFileSync('id', ['-g', u], { encoding: 'utf8' }));
    const st = fs.statSync(path.join(dir, 'places/p2/jobs'));
    expect([st.uid, st.gid, st.mode & 0o7777]).toEqual([uid(U2), gid(U1), 0o2770]);
    expect((await runFspl(['net', 'check', file])).stderr).not.toMatch(/warning: place .*(owned|group|others)/);

    for (const p of ['a', 'evil', 'b']) await net.put('p1', Buffer.from(p), { key: p });
    const summary = await net.run({ drain: true, workers: 2 });
    expect(summary.leftovers).toEqual([]);
    const out = await tokensIn(path.join(dir, 'places/p3'));
    expect(out.map((t) => t.payload)).toEqual([`t2:${U2}:t1:${U1}:a\n`, `t2:${U2}:t1:${U1}:b\n`]);
    // The runner (root) replaced p2's sendseq as it committed t1's outputs: it is still its writers'.
    const seq = fs.statSync(path.join(dir, 'places/p2/sendseq'));
    expect([seq.uid, seq.gid, seq.mode & 0o7777]).toEqual([uid(U2), gid(U1), 0o660]);
    const err = await tokensIn(path.join(dir, 'places/err'));
    expect(err.map((t) => t.key)).toEqual(['evil']);
    expect(err[0]!.env.ERROR_STDERR).toMatch(/Permission denied/);
    expect(fs.existsSync(path.join(dir, 'places/p3/jobs/evil'))).toBe(false);

    // The rule broken on disk: net check says so.
    fs.chmodSync(path.join(dir, 'places/p1/jobs'), 0o2777);
    expect((await runFspl(['net', 'check', file])).stderr).toMatch(/warning: place p1: .*jobs is others may write it/);
  }, 120_000);

  test('not as root: a clear error', async () => {
    const { dir, file } = makeNet(`
places: { p1: {}, p2: {} }
transitions:
  t1: { in: p1, user: ${U1}, run: [cat], out: p2 }
`);
    fs.chmodSync(dir, 0o755);
    const r = execFileSync(
      'sh',
      [
        '-c',
        `setpriv --reuid=${U2} --regid=${U2} --clear-groups ${process.execPath} ` +
          `${path.join(build, 'bin', 'fspl')} net run ${file} --drain 2>&1; echo "status $?"`,
      ],
      { encoding: 'utf8' },
    );
    expect(r).toMatch(/^Error: Transition t1 runs as fspltA\d+: fspl net run must run as root/);
    expect(r).toMatch(/status 1\n$/);
  }, 30_000);
});
