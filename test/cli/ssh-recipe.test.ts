/**
 * docs/queues.md's "Resending, without stranding the queue": its shell block run as written, with a
 * local `sh -c` standing in for ssh (the remote command runs in the same HOME) and `sleep` made
 * instant. The stand-in fails the attempts a test asks it to, as a network does: before sending
 * anything, after sending part of the packet, or after the packet was stored (the
 * acknowledgement lost). Whatever fails, the queue gets each packet once and never waits for a
 * lost number.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN, ROOT, tempDir } from '../helpers.js';

const page = fs.readFileSync(path.join(ROOT, 'docs', 'queues.md'), 'utf8');
const recipe = /### Resending, without stranding the queue[\s\S]*?```sh\n([\s\S]*?)```/.exec(page)?.[1];

/**
 * ssh and sleep for the recipe. FAULTS lists what each attempt does, by its rank: `down` (the
 * connection fails at once), `cut` (1000 bytes arrive, the header and part of the payload, then
 * the connection drops), `lost` (the remote command runs to its end, but ssh fails before saying
 * so), `lost-run` (the same, and the queue's processor runs the job before the next attempt);
 * anything else, or none: a good connection.
 */
const STAND_INS = `
sleep() { :; }
ssh() {
  shift
  attempt=$(( \${attempt:-0} + 1 ))
  echo "$attempt" >> "$HOME/attempts"
  case "$(echo "$FAULTS" | cut -d, -f"$attempt")" in
    down) return 255 ;;
    cut) head -c 1000 | sh -c "$1"; return 255 ;;
    lost) sh -c "$1"; return 255 ;;
    lost-run) sh -c "$1"; fspl queue-process -q "$HOME/queue" true; return 255 ;;
    *) sh -c "$1" ;;
  esac
}
`;

function home(): { home: string; env: NodeJS.ProcessEnv } {
  const h = tempDir();
  const bin = path.join(h, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'fspl'), `#!/bin/sh\nexec "${process.execPath}" "${FSPL_BIN}" "$@"\n`, {
    mode: 0o755,
  });
  fs.mkdirSync(path.join(h, 'dir'));
  fs.writeFileSync(path.join(h, 'dir', 'file'), 'x'.repeat(10_000));
  const env = { HOME: h, PATH: `${bin}:/usr/bin:/bin`, TMPDIR: h };
  expect(spawnSync('fspl', ['queue-init', '-q', path.join(h, 'queue')], { env }).status).toBe(0);
  return { home: h, env };
}

function send(h: { home: string; env: NodeJS.ProcessEnv }, faults: string) {
  fs.rmSync(path.join(h.home, 'attempts'), { force: true });
  const r = spawnSync('sh', ['-c', `${STAND_INS}\n${recipe}`], {
    cwd: h.home,
    env: { ...h.env, FAULTS: faults },
    encoding: 'utf8',
  });
  const attempts = fs.readFileSync(path.join(h.home, 'attempts'), 'utf8').trim().split('\n').length;
  return { status: r.status, stderr: r.stderr, attempts };
}

function fspl(h: { env: NodeJS.ProcessEnv; home: string }, args: string[]) {
  return spawnSync('fspl', args, { env: h.env, cwd: h.home, encoding: 'utf8' });
}

describe("docs/queues.md's ssh recipe: keep the packet until queue-write succeeds, and resend that same packet", () => {
  it('is in docs/queues.md', () => {
    expect(recipe).toMatch(/fspl prepare --seal/);
  });

  it.each([
    ['a good connection', '', 1],
    ['a connection that fails, then one cut mid-packet, then a good one', 'down,cut,ok', 3],
    ['an acknowledgement lost: the packet is not stored twice', 'lost,ok', 2],
    ['an acknowledgement lost, and the job run before the next attempt: not stored again', 'lost-run,ok', 2],
  ])('%s: the queue gets the packet once, and the sender drops its copy', (_what, faults, tries) => {
    const h = home();
    const r = send(h, faults as string);
    expect([r.status, r.attempts]).toEqual([0, tries]);
    if ((faults as string).includes('cut'))
      expect(r.stderr).toMatch(/^Error: Payload ends early: \d+ of \d+ bytes \(cut short in transit\?\)\n$/);
    else expect(r.stderr).toBe('');
    expect(fs.readdirSync(path.join(h.home, 'outgoing'))).toEqual([]);
    const ran = faults === 'lost-run,ok';
    const ls = fspl(h, ['queue-ls', '-q', 'queue']).stdout.trim().split('\n').slice(1);
    expect(ls.map((l) => l.split(/\s+/)[0])).toEqual(ran ? [] : ['1']);
    // The next packet follows it: no number lost, nothing for the queue to wait for.
    expect(send(h, '').status).toBe(0);
    const status = fspl(h, ['queue-status', '-q', 'queue']);
    expect(status.status, status.stdout).toBe(0);
    const out = path.join(h.home, 'out');
    fs.mkdirSync(out);
    expect(fspl(h, ['queue-process', '-q', 'queue', 'tar', '--', '-xf', '-', '-C', out]).status).toBe(0);
    expect(fs.readFileSync(path.join(out, 'dir', 'file'), 'utf8')).toBe('x'.repeat(10_000));
    expect(fspl(h, ['queue-get-next', '-q', 'queue']).stdout).toBe('3\n');
  });

  it("sends the packets a stopped sender left in ~/outgoing, with the page's loop", () => {
    const h = home();
    const outgoing = path.join(h.home, 'outgoing');
    fs.mkdirSync(outgoing);
    for (const n of [1, 2]) {
      const p = spawnSync(
        'fspl',
        ['prepare', '--seal', '-s', path.join(h.home, 'state'), '-i', path.join(h.home, 'dir', 'file')],
        { env: h.env },
      );
      fs.writeFileSync(path.join(outgoing, `packet.${n}`), p.stdout);
    }
    const loop = /`(for p in ~\/outgoing\/packet\.\*; do send "\$p";\s*done)`/.exec(page)?.[1]?.replace(/\s+/g, ' ');
    expect(loop).toBeDefined();
    const send = recipe!.slice(0, recipe!.indexOf('\n}\n') + 3);
    const r = spawnSync('sh', ['-c', `${STAND_INS}\n${send}\n${loop}`], {
      cwd: h.home,
      env: { ...h.env, FAULTS: 'cut,ok,down' },
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    // the cut copy, refused
    expect(r.stderr).toMatch(/^Error: Payload ends early: \d+ of 10000 bytes \(cut short in transit\?\)\n$/);
    expect(fs.readdirSync(outgoing)).toEqual([]);
    expect(fspl(h, ['queue-process', '-q', 'queue', 'true']).status).toBe(0);
    expect(fspl(h, ['queue-get-next', '-q', 'queue']).stdout).toBe('3\n');
  });
});
