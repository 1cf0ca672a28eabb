/**
 * Signed packets through the CLI, as an attacker who can put files into a queue's jobs/ would try
 * them: a forged packet (unsigned, CRC recomputed), one signed by an unknown key, a signed one
 * with a payload byte or a parameter changed, another packet's signature pasted in, a key past
 * its valid-before, a signature of another namespace. None runs; each lands in refused/ with its
 * reason; the real packet of that number, arriving later, runs in order. Real ssh-keygen and
 * ssh-agent check our signatures and make ones we check.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeHeader, encodeHeader, signedMessage } from '../../src/packet/codec.js';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN } from '../helpers.js';

const NODE = process.execPath;
const KEYGEN = '/usr/bin/ssh-keygen';
const missing = [KEYGEN, '/usr/bin/ssh-agent', '/usr/bin/ssh-add'].filter((p) => !fs.existsSync(p));

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

function fspl(args: string[], opts: { input?: Buffer | string; env?: NodeJS.ProcessEnv } = {}): Run {
  const r = spawnSync(NODE, [FSPL_BIN, ...args], {
    input: opts.input ?? '',
    env: { ...process.env, TZ: 'UTC', ...opts.env },
    maxBuffer: 1 << 28,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

function sh(script: string, env: NodeJS.ProcessEnv = {}): Run {
  const r = spawnSync('bash', ['-c', `fspl() { "${NODE}" "${FSPL_BIN}" "$@"; }\n${script}`], {
    env: { ...process.env, ...env },
    maxBuffer: 1 << 28,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

function keygen(file: string, type = 'ed25519', passphrase = ''): string {
  const r = spawnSync(KEYGEN, ['-q', '-t', type, '-N', passphrase, '-C', path.basename(file), '-f', file]);
  expect(r.status, r.stderr.toString()).toBe(0);
  return fs.readFileSync(`${file}.pub`, 'utf8').trim();
}

let dir: string;
let alice: string;
let mallory: string;
let old: string;
let signers: string;

beforeAll(() => {
  if (missing.length > 0) return;
  // One directory for the whole file (the keys are made once): helpers' tempDir goes after each test.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-sign-'));
  alice = path.join(dir, 'alice');
  mallory = path.join(dir, 'mallory');
  old = path.join(dir, 'old');
  const a = keygen(alice);
  keygen(mallory);
  const o = keygen(old);
  signers = path.join(dir, 'allowed_signers');
  fs.writeFileSync(
    signers,
    `# who may send jobs\nalice@example namespaces="fspl" ${a}\nold@example valid-before="20200101" ${o}\n`,
  );
});

/** A new queue and a recorder command: each run appends `SEQ SIGNER PAYLOAD` to DIR/ran. */
function setupQueue(name: string) {
  const q = path.join(dir, name);
  expect(fspl(['queue-init', '-q', q]).code).toBe(0);
  const ran = path.join(dir, `${name}.ran`);
  const cmd = ['sh', '--', '-c', `printf '%s %s %s\\n' "$FSPL_SEQ" "$FSPL_JOB_SIGNER" "$(cat)" >> "${ran}"`];
  const runs = () => (fs.existsSync(ran) ? fs.readFileSync(ran, 'utf8') : '');
  const run = (extra: string[] = []) =>
    fspl(['queue-process', '-q', q, '--allowed-signers', signers, ...extra, ...cmd]);
  const write = (packet: Buffer) => expect(fspl(['queue-write', '-q', q], { input: packet }).code).toBe(0);
  // As an attacker who may write jobs/ (a synced folder's other device) puts a file there.
  const plant = (packet: Buffer) => fs.writeFileSync(path.join(q, 'jobs', `fspl-${crypto.randomUUID()}.fspl`), packet);
  const refused = () => (fs.existsSync(path.join(q, 'refused')) ? fs.readdirSync(path.join(q, 'refused')).sort() : []);
  return { q, runs, run, write, plant, refused };
}

/** A packet made by our prepare: -s SEQFILE, payload, extra options. */
function prepare(seqfile: string, payload: string, options: string[] = [], params: string[] = []): Buffer {
  const r = fspl(['prepare', '-s', seqfile, '-i', '-', ...options, '--', ...params], { input: payload });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

/** A packet's header re-encoded after `change` (keeping whatever signature it had), payload unchanged. */
function tamper(packet: Buffer, change: (h: ReturnType<typeof decodeHeader>['header']) => void): Buffer {
  const { header, length } = decodeHeader(packet);
  change(header);
  return Buffer.concat([encodeHeader(header), packet.subarray(length)]);
}

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describeIfPresent('signed packets through the CLI', missing, { what: 'signed packet tests' }, () => {
  it('ssh-keygen -Y verify accepts our signature, over the bytes stdin-signature --data prints', () => {
    const packet = prepare(path.join(dir, 'v.seq'), 'hello', ['--sign', alice], ['p1']);
    const sig = path.join(dir, 'v.sig');
    const data = path.join(dir, 'v.data');
    const s = fspl(['stdin-signature'], { input: packet });
    expect(s.code, s.stderr).toBe(0);
    expect(s.stdout.toString()).toMatch(/^-----BEGIN SSH SIGNATURE-----\n[\s\S]+\n-----END SSH SIGNATURE-----\n$/);
    fs.writeFileSync(sig, s.stdout);
    fs.writeFileSync(data, fspl(['stdin-signature', '--data'], { input: packet }).stdout);
    const v = spawnSync(KEYGEN, ['-Y', 'verify', '-f', signers, '-I', 'alice@example', '-n', 'fspl', '-s', sig], {
      input: fs.readFileSync(data),
    });
    expect(v.status, v.stderr.toString()).toBe(0);
    expect(v.stdout.toString()).toMatch(/Good "fspl" signature for alice@example with ED25519 key SHA256:/);
    // The data is the header's metadata without the signature: another namespace or identity fails.
    expect(
      spawnSync(KEYGEN, ['-Y', 'verify', '-f', signers, '-I', 'alice@example', '-n', 'git', '-s', sig], {
        input: fs.readFileSync(data),
      }).status,
    ).not.toBe(0);
    // An unsigned packet has no signature to print.
    const plain = fspl(['stdin-signature'], { input: prepare('-', 'x') });
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/^Error: packet 1 is not signed$/m);
  });

  it(
    'a refusal a power cut left with both names (a hard link ' +
      'no scan reads) is finished as the next run takes the lock',
    () => {
      const Q = setupQueue('cut-refusal');
      const seq = path.join(dir, 'cut-refusal.seq');
      Q.write(prepare(seq, 'one', ['--sign', alice]));
      const attacker = path.join(dir, 'cut-attacker.seq');
      fs.writeFileSync(attacker, '1\n');
      Q.plant(prepare(attacker, 'PWNED', ['--seal']));
      expect(Q.run().code).toBe(0);
      const [name] = Q.refused().filter((n) => !n.endsWith('.why'));
      // As pcfs leaves it after a cut between the fsyncs of refused/ and of jobs/: one file, two names.
      fs.linkSync(path.join(Q.q, 'refused', name!), path.join(Q.q, 'jobs', name!));
      const r = Q.run();
      expect(r.code, r.stderr).toBe(0);
      expect(fs.readdirSync(path.join(Q.q, 'jobs'))).toEqual([]);
      expect(Q.refused()).toEqual([name, `${name}.why`]);
      expect(Q.runs()).toMatch(/^1 alice@example one\n$/);
    },
  );

  it(
    'forgeries never run and go to refused/ with their reason; ' +
      'the real packet of that number runs later, in order',
    () => {
      const Q = setupQueue('forged');
      const seq = path.join(dir, 'forged.seq');
      Q.write(prepare(seq, 'one', ['--sign', alice]));
      const real2 = prepare(seq, 'two', ['--sign', alice], ['keep']);
      Q.write(prepare(seq, 'three', ['--sign', alice]));
      const attacker = path.join(dir, 'attacker.seq');
      fs.writeFileSync(attacker, '2\n');
      const forgeries: Array<[string, Buffer, RegExp]> = [
        ['unsigned, sealed', prepare(attacker, 'PWNED', ['--seal']), /packet 2 refused: not signed/],
        [
          'signed by an unknown key',
          (fs.writeFileSync(attacker, '2\n'), prepare(attacker, 'PWNED', ['--sign', mallory])),
          /packet 2 refused: .*not in .*allowed_signers/,
        ],
        [
          'a payload byte changed',
          Buffer.concat([real2.subarray(0, real2.length - 3), Buffer.from('PWN')]),
          /packet 2 refused: payload does not match its signature/,
        ],
        [
          'a parameter changed',
          tamper(real2, (h) => {
            if (h.cmd.kind === 'Command') h.cmd.params[0] = Buffer.from('rm -rf');
          }),
          /packet 2 refused: signature does not match/,
        ],
        [
          "another packet's signature pasted in",
          (() => {
            const other = decodeHeader(prepare(path.join(dir, 'other.seq'), 'PWNED', ['--sign', alice])).header;
            fs.writeFileSync(attacker, '2\n');
            return tamper(prepare(attacker, 'PWNED', ['--seal']), (h) => {
              h.signature = other.signature;
            });
          })(),
          /packet 2 refused: signature does not match/,
        ],
        [
          'a key past its valid-before',
          (fs.writeFileSync(attacker, '2\n'), prepare(attacker, 'PWNED', ['--sign', old])),
          /packet 2 refused: .*valid.*before/,
        ],
      ];
      for (const [, packet] of forgeries) Q.plant(packet);
      const r = Q.run();
      expect(r.code, r.stderr).toBe(0);
      expect(Q.runs()).toBe('1 alice@example one\n');
      for (const [what, , why] of forgeries) expect(r.stderr, what).toMatch(why);
      const refused = Q.refused();
      expect(refused.filter((n) => n.endsWith('.why'))).toHaveLength(forgeries.length);
      const notes = refused
        .filter((n) => n.endsWith('.why'))
        .map((n) => fs.readFileSync(path.join(Q.q, 'refused', n), 'utf8'));
      for (const [what, , why] of forgeries)
        expect(
          notes.some((n) => why.test(n)),
          what,
        ).toBe(true);
      expect(notes.join('')).toMatch(/\(key SHA256:[A-Za-z0-9+/]{43}\)|SHA256:[A-Za-z0-9+/]{43}/);
      expect(fspl(['queue-get-next', '-q', Q.q]).stdout.toString()).toBe('2\n');
      // queue-status names them.
      const st = fspl(['queue-status', '-q', Q.q]);
      expect(st.stdout.toString()).toMatch(/^refused: +6 \(in refused\/, never run\)$/m);
      // With the signers, queue-status names a forgery waiting in jobs/ before any run sees it.
      Q.plant(forgeries[0]![1]);
      const judged = fspl(['queue-status', '-q', Q.q, '--allowed-signers', signers]);
      expect(judged.stdout.toString()).toMatch(/^signed: +1 \(1 would be refused\)$/m);
      expect(judged.stdout.toString()).toMatch(/^would refuse fspl-.*\.fspl: packet 2 refused: not signed$/m);
      expect(
        JSON.parse(fspl(['queue-status', '-q', Q.q, '--allowed-signers', signers, '--json']).stdout.toString())
          .unsigned,
      ).toHaveLength(1);
      // The real packet arrives: 2 then 3 run, in order, and never the forgeries.
      Q.write(real2);
      const r2 = Q.run();
      expect(r2.code, r2.stderr).toBe(0);
      expect(Q.runs()).toBe('1 alice@example one\n2 alice@example two\n3 alice@example three\n');
    },
  );

  it('a signature of another namespace is refused (made by ssh-keygen -Y sign -n git)', () => {
    const Q = setupQueue('namespace');
    // prepare itself refuses such a signer, and gives its number back.
    const seq = path.join(dir, 'ns.seq');
    const bad = fspl(['prepare', '-s', seq, '--sign-command', `${KEYGEN} -Y sign -f ${alice} -n git`], { input: '' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/namespace "git", not "fspl"/);
    expect(fspl(['prepare-get-next', '-s', seq]).stdout.toString()).toBe('1\n');
    // Made by hand: a packet whose signature is git's, over the right data.
    const sealed = prepare(path.join(dir, 'ns2.seq'), 'PWNED', ['--seal']);
    const { header } = decodeHeader(sealed);
    const sha512 = crypto.createHash('sha512').update('PWNED').digest();
    const data = signedMessage(header, sha512);
    const sig = spawnSync(KEYGEN, ['-Y', 'sign', '-f', alice, '-n', 'git'], { input: data });
    expect(sig.status, sig.stderr.toString()).toBe(0);
    const blob = Buffer.from(
      sig.stdout
        .toString()
        .replace(/-----[A-Z ]+-----/g, '')
        .replace(/\s+/g, ''),
      'base64',
    );
    Q.plant(tamper(sealed, (h) => (h.signature = { sha512, sshsig: blob })));
    const r = Q.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/packet 1 refused: .*namespace/);
    expect(Q.runs()).toBe('');
  });

  it(
    'a signature made by ssh-keygen -Y sign (--sign-command) ' +
      'is accepted, and FSPL_ALLOWED_SIGNERS serves cron lines',
    () => {
      const Q = setupQueue('command');
      const seq = path.join(dir, 'cmd.seq');
      Q.write(prepare(seq, 'by command', ['--sign-command', `${KEYGEN} -Y sign -f ${alice} -n fspl`]));
      const r = fspl(
        [
          'queue-process',
          '-q',
          Q.q,
          'sh',
          '--',
          '-c',
          `echo "$FSPL_JOB_SIGNER $FSPL_JOB_SIGNER_KEY $(cat)" > "${dir}/cmd.out"`,
        ],
        {
          env: { FSPL_ALLOWED_SIGNERS: signers },
        },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(fs.readFileSync(path.join(dir, 'cmd.out'), 'utf8')).toMatch(
        /^alice@example SHA256:[A-Za-z0-9+/]{43} by command\n$/,
      );
      // A signer that fails: the number is given back, nothing is written.
      const failed = fspl(['prepare', '-s', seq, '--sign-command', 'exit 3'], { input: 'x' });
      expect(failed.code).toBe(1);
      expect(failed.stdout.length).toBe(0);
      expect(fspl(['prepare-get-next', '-s', seq]).stdout.toString()).toBe('2\n');
    },
  );

  it('queue-write --allowed-signers stores only what its signature lets in', () => {
    const Q = setupQueue('door');
    const w = (packet: Buffer) => fspl(['queue-write', '-q', Q.q, '--allowed-signers', signers], { input: packet });
    const forged = w(prepare('-', 'PWNED', ['--seal']));
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/^Error: packet 1 refused: not signed$/m);
    const good = prepare(path.join(dir, 'door.seq'), 'fine', ['--sign', alice]);
    const flipped = Buffer.from(good);
    flipped[flipped.length - 1] ^= 1;
    const bad = w(flipped);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/payload does not match its signature/);
    expect(fs.readdirSync(path.join(Q.q, 'jobs'))).toEqual([]);
    expect(w(good).code).toBe(0);
    expect(fs.readdirSync(path.join(Q.q, 'jobs'))).toHaveLength(1);
  });

  it(
    'stdin-process --allowed-signers: a forgery never ' + 'starts the command; a signed packet runs with its signer',
    () => {
      const marker = path.join(dir, 'stdin.marker');
      const cmd = ['sh', '--', '-c', `echo "$FSPL_JOB_SIGNER $(cat)" > "${marker}"`];
      const forged = fspl(['stdin-process', '--allowed-signers', signers, ...cmd], {
        input: prepare('-', 'PWNED', ['--sign', mallory]),
      });
      expect(forged.code).toBe(1);
      expect(forged.stderr).toMatch(/^Error: packet 1 refused: .*not in/m);
      expect(fs.existsSync(marker)).toBe(false);
      // Through a pipe and from a file, the payload is judged whole first.
      const big = 'x'.repeat(300_000);
      const good = prepare('-', big, ['--sign', alice]);
      const ok = fspl(['stdin-process', '--allowed-signers', signers, ...cmd], { input: good });
      expect(ok.code, ok.stderr).toBe(0);
      expect(fs.readFileSync(marker, 'utf8')).toBe(`alice@example ${big}\n`);
      const file = path.join(dir, 'stdin.fspl');
      const cut = Buffer.concat([good.subarray(0, good.length - 1), Buffer.from('!')]);
      fs.writeFileSync(file, cut);
      fs.rmSync(marker);
      const r = sh(`fspl stdin-process --allowed-signers "${signers}" sh -- -c 'cat > "${marker}"' < "${file}"`);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/payload does not match its signature/);
      expect(fs.existsSync(marker)).toBe(false);
    },
  );

  it('a passphrase key signs through a real ssh-agent, and says what to do without one', () => {
    const key = path.join(dir, 'locked');
    const pub = keygen(key, 'ed25519', 'secret words');
    const own = path.join(dir, 'locked_signers');
    fs.writeFileSync(own, `locked@example ${pub}\n`);
    const noAgent = fspl(['prepare', '-s', '-', '--sign', key], { env: { SSH_AUTH_SOCK: '' } });
    expect(noAgent.code).toBe(1);
    expect(noAgent.stderr).toMatch(/passphrase.*ssh-add/);
    const sock = path.join(dir, 'agent.sock');
    const askpass = path.join(dir, 'askpass.sh');
    fs.writeFileSync(askpass, '#!/bin/sh\necho "secret words"\n', { mode: 0o755 });
    const agent = sh(
      `ssh-agent -a "${sock}" > /dev/null && SSH_AUTH_SOCK="${sock}" SSH_ASKPASS="` +
        `${askpass}" SSH_ASKPASS_REQUIRE=force DISPLAY=x ssh-add "${key}" < /dev/null`,
    );
    try {
      expect(agent.code, agent.stderr).toBe(0);
      const packet = fspl(['prepare', '-s', '-', '--sign', key], { env: { SSH_AUTH_SOCK: sock } });
      expect(packet.code, packet.stderr).toBe(0);
      const r = fspl(['stdin-process', '--allowed-signers', own, 'sh', '--', '-c', 'echo "$FSPL_JOB_SIGNER"'], {
        input: packet.stdout,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.toString()).toBe('locked@example\n');
    } finally {
      sh(`SSH_AUTH_SOCK="${sock}" ssh-agent -k`, { SSH_AGENT_PID: '' });
      spawnSync('pkill', ['-f', `ssh-agent -a ${sock}`]);
    }
  });

  it('signed NOP and Fail packets are judged too: a forged NOP does not skip a number', () => {
    const Q = setupQueue('nops');
    const seq = path.join(dir, 'nops.seq');
    const forgedNop = fspl(['prepare-nop', '-s', '-']).stdout;
    Q.plant(forgedNop);
    expect(Q.run().code).toBe(0);
    expect(fspl(['queue-get-next', '-q', Q.q]).stdout.toString()).toBe('1\n');
    expect(Q.refused()).toHaveLength(2);
    const nop = fspl(['prepare-nop', '-s', seq, '--sign', alice]);
    expect(nop.code, nop.stderr).toBe(0);
    Q.write(nop.stdout);
    Q.write(prepare(seq, 'after the nop', ['--sign', alice]));
    expect(Q.run().code).toBe(0);
    expect(Q.runs()).toBe('2 alice@example after the nop\n');
  });

  it(
    'a replay: in sequence order a copy of a signed packet that ' +
      'ran never runs again; timestamp order runs it, and says so',
    () => {
      const Q = setupQueue('replay');
      const packet = prepare(path.join(dir, 'replay.seq'), 'once', ['--sign', alice]);
      Q.write(packet);
      expect(Q.run().code).toBe(0);
      Q.plant(packet);
      const again = Q.run();
      expect(again.code, again.stderr).toBe(0);
      expect(Q.runs()).toBe('1 alice@example once\n');
      // Timestamp order takes no numbers: the copy runs, and the run warned before it did.
      const ts = Q.run(['--order-by', 'Timestamp']);
      expect(ts.code, ts.stderr).toBe(0);
      expect(ts.stderr).toMatch(/in timestamp order a copy of a signed packet that already ran runs again/);
      expect(Q.runs()).toBe('1 alice@example once\n1 alice@example once\n');
    },
  );

  it(
    'through a decoder: the decoded packet is judged whole before ' +
      'the command starts; a forgery goes to refused/ as stored',
    () => {
      const Q = setupQueue('gzipped');
      const seq = path.join(dir, 'gz.seq');
      const gz = (packet: Buffer) => zlib.gzipSync(packet);
      Q.plant(gz(prepare(seq, 'one', ['--sign', alice])));
      const attacker = path.join(dir, 'gz-attacker.seq');
      fs.writeFileSync(attacker, '2\n');
      Q.plant(gz(prepare(attacker, 'PWNED', ['--sign', mallory])));
      const r = Q.run(['-d', 'zcat']);
      expect(r.code, r.stderr).toBe(0);
      expect(Q.runs()).toBe('1 alice@example one\n');
      expect(r.stderr).toMatch(/packet 2 refused: .*not in/);
      const kept = Q.refused().filter((n) => !n.endsWith('.why'));
      expect(kept).toHaveLength(1);
      // as it was stored
      expect(fs.readFileSync(path.join(Q.q, 'refused', kept[0]!)).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    },
  );
});
