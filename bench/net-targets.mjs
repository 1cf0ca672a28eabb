/**
 * The targets of issue 20 ("a net runner at the machine's floor"): each figure a ratio against a
 * floor measured in the same run (the same commands with no fspl), the median of `rounds` runs,
 * with the machine's load (/proc/loadavg) around each row. Called by bench/net.mjs (section
 * `targets`), which puts the markdown into docs/benchmarks.md.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const FLOORS = fileURLToPath(new URL('./floors.mjs', import.meta.url));
const JS_MOVES = fileURLToPath(new URL('./js-moves.mjs', import.meta.url));

/** The 1-minute load average, as /proc/loadavg says (os.loadavg elsewhere). */
export function load() {
  try {
    return Number(fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return os.loadavg()[0];
  }
}

/** Run `sh -c script`, stdin from /dev/null, output thrown away: its wall time (ms). */
function shWall(script, env = process.env) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    spawn('sh', ['-c', script], { stdio: ['ignore', 'ignore', 'inherit'], env })
      .on('error', reject)
      .on('exit', (code) =>
        code === 0
          ? resolve(Number(process.hrtime.bigint() - t0) / 1e6)
          : reject(new Error(`sh -c ${script.slice(0, 80)}… exited ${code}`)),
      );
  });
}

export async function benchTargets(ctx) {
  const { opts, log, median, table, freshDir, writeNet, fill, timed, NODE, BIN, expectAll } = ctx;
  const Q = opts.quick;
  const rounds = opts.rounds;
  const rows = [];
  const notes = [];
  /** Measure `ours` and `floor` (async, each returning a number) `rounds` times, interleaved. */
  const measure = async (what, ours, floor) => {
    const l0 = load();
    const a = [];
    const b = [];
    for (let i = 0; i < rounds; i++) {
      log(`targets: ${what} (round ${i + 1} of ${rounds})`);
      a.push(await ours(i));
      if (floor) b.push(await floor(i));
    }
    return {
      ours: median(a),
      floor: floor ? median(b) : undefined,
      all: a,
      load: `${l0.toFixed(2)}–${load().toFixed(2)}`,
    };
  };
  const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
  /** `node bench/floors.mjs WHAT DIR N K` in a new directory under `where`: the milliseconds it prints. */
  const floorMs = (where, what, n, k) => {
    const dir = fs.mkdtempSync(path.join(where, `fspl-${what}-floor-`));
    try {
      return Number(timed([NODE, FLOORS, what, dir, String(n), String(k)], {}).stdout.trim());
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  const row = (name, floorName, m, fmt, target, ok, ratio = m.ours / m.floor) =>
    rows.push([
      name,
      floorName,
      fmt(m.ours),
      m.floor === undefined ? '—' : fmt(m.floor),
      m.floor === undefined ? '—' : `${ratio.toFixed(2)}×`,
      target,
      typeof ok === 'string' ? ok : ok ? 'met' : '**missed**',
      m.load,
    ]);

  // ---- Jefferson, start-up included, against xargs -P 2 of the same commands.
  const stages = [
    ['s10', '0.01'],
    ['s20', '0.02'],
    ['s40', '0.04'],
  ];
  const jeffYaml =
    `places: { a: {}, b: {}, c: {}, d: {} }\n` +
    `transitions:\n${stages
      .map(([t, sl], i) => `  ${t}: { in: ${'abc'[i]}, out: ${'bcd'[i]}, workers: 2, run: "sleep ${sl}; cat" }`)
      .join('\n')}\n`;
  for (const N of Q ? [10] : [80, 200]) {
    const m = await measure(
      `Jefferson ${N} tokens`,
      async () => {
        const dir = freshDir('t-jeff');
        const { file, net } = writeNet(dir, jeffYaml);
        await fill(net, 'a', N);
        const t = timed([NODE, BIN, 'net', 'run', '--drain', '--workers', '2', file], { cwd: dir });
        expectAll(path.join(dir, 'places/d'), N, 'jefferson (targets)');
        fs.rmSync(dir, { recursive: true, force: true });
        return t.wall;
      },
      () =>
        shWall(
          `for i in $(seq ${N}); do echo 0.01; echo 0.02; echo 0.04; ` +
            `done | xargs -P 2 -n 1 sh -c 'sleep "$0"; cat </dev/null'`,
        ),
    );
    row(
      `Jefferson 10/20/40 ms, W=2, ${N} tokens, start-up included (\`fspl net run --drain\`)`,
      `the ${3 * N} commands by \`xargs -P 2\``,
      m,
      s,
      '≤ 1.10×',
      m.ours / m.floor <= 1.1,
    );
  }

  // ---- And-merges, in this process (the runner of `fspl net run`, through the library), so that
  // its own CPU (getrusage of this process: the commands' CPU is their own) and its event-loop
  // delay are measured where it runs.
  const MERGE_CMD = 'cat "$FSPL_IN_l" "$FSPL_IN_r"';
  const merge = async (n) => {
    const dir = freshDir('t-merge');
    const { net } = writeNet(
      dir,
      `places: { l: {}, r: {}, o: {} }\ntransitions:\n  m: { in: [l, r], out: o, run: '${MERGE_CMD}' }\n`,
    );
    // Put crosswise, so that no pair is complete until all of one side is in.
    await fill(net, 'r', n, (i) => `r${i}\n`);
    await fill(net, 'l', n, (i) => `l${i}\n`);
    const h = monitorEventLoopDelay({ resolution: 1 });
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    h.enable();
    await net.run({ drain: true, workers: 2 });
    h.disable();
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    expectAll(path.join(dir, 'places/o'), n, 'and-merge (targets)');
    fs.rmSync(dir, { recursive: true, force: true });
    return {
      wall,
      cpuPerPair: (c.user + c.system) / 1000 / n,
      p50: h.percentile(50) / 1e6,
      p99: h.percentile(99) / 1e6,
      max: h.max / 1e6,
    };
  };
  const [small, big] = Q ? [100, 400] : [500, 4000];
  const cpu = {};
  for (const n of [small, big]) {
    const runs = [];
    cpu[n] = await measure(`and-merge, ${n} waiting pairs`, async () => {
      const r = await merge(n);
      runs.push(r);
      return r.cpuPerPair;
    });
    cpu[n].walls = runs.map((r) => r.wall);
  }
  const cpuRatio = cpu[big].ours / cpu[small].ours;
  rows.push([
    `and-merge, the runner's CPU per pair at ${big.toLocaleString('en')} waiting pairs`,
    `itself at ${small.toLocaleString('en')} pairs`,
    `${cpu[big].ours.toFixed(3)} ms`,
    `${cpu[small].ours.toFixed(3)} ms`,
    `${cpuRatio.toFixed(2)}×`,
    '≤ 1.2×',
    cpuRatio <= 1.2 ? 'met' : '**missed**',
    `${cpu[small].load}, ${cpu[big].load}`,
  ]);
  notes.push(
    `And-merge walls: ${small} pairs ${s(median(cpu[small].walls))}` +
      `, ${big} pairs ${s(median(cpu[big].walls))} (medians).`,
  );

  const BIG = Q ? 300 : 10_000;
  const eld = [];
  const m10 = await measure(
    `and-merge ${BIG} x ${BIG}`,
    async () => {
      const r = await merge(BIG);
      eld.push(r);
      return r.wall;
    },
    async () => {
      const dir = freshDir('t-loop');
      fs.writeFileSync(path.join(dir, 'l'), 'l0\n');
      fs.writeFileSync(path.join(dir, 'r'), 'r0\n');
      const ms = await shWall(`i=0; while [ $i -lt ${BIG} ]; do sh -c '${MERGE_CMD}' >/dev/null; i=$((i+1)); done`, {
        ...process.env,
        FSPL_IN_l: path.join(dir, 'l'),
        FSPL_IN_r: path.join(dir, 'r'),
      });
      fs.rmSync(dir, { recursive: true, force: true });
      return ms;
    },
  );
  row(
    `and-merge ${BIG.toLocaleString('en')} × ${BIG.toLocaleString('en')}, \`sh -c 'cat …'\`, wall`,
    `the same \`sh -c\` ${BIG.toLocaleString('en')} times by a shell loop`,
    m10,
    s,
    '≤ 1.5×',
    m10.ours / m10.floor <= 1.5,
  );
  const p99 = median(eld.map((r) => r.p99));
  rows.push([
    `event-loop delay p99 during the ${BIG.toLocaleString('en')} merge (p50 ` +
      `${median(eld.map((r) => r.p50)).toFixed(2)} ms, max ${median(eld.map((r) => r.max)).toFixed(1)} ms)`,
    '—',
    `${p99.toFixed(2)} ms`,
    '—',
    '—',
    '≤ 10 ms',
    p99 <= 10 ? 'met' : '**missed**',
    m10.load,
  ]);

  // ---- A chain of 3 cat, start-up included, against the same cats by xargs -P 2.
  const CN = Q ? 100 : 2000;
  const protocolFloor = [];
  const chain = await measure(
    `chain of 3 cat, ${CN} tokens`,
    async () => {
      const dir = freshDir('t-chain');
      const { file, net } = writeNet(
        dir,
        `places: { q0: {}, q1: {}, q2: {}, q3: {} }\ntransitions:\n  t0: { in: q0, out: q1, run: [cat] }\n` +
          `  t1: { in: q1, out: q2, run: [cat] }\n  t2: { in: q2, out: q3, run: [cat] }\n`,
      );
      await fill(net, 'q0', CN);
      const t = timed([NODE, BIN, 'net', 'run', '--drain', '--workers', '2', file], { cwd: dir });
      expectAll(path.join(dir, 'places/q3'), CN, 'chain (targets)');
      fs.rmSync(dir, { recursive: true, force: true });
      return t.wall;
    },
    async () => {
      // A second floor, in the same rounds: the same cats with the commit's system calls (what
      // the protocol itself costs, no fspl), to split a miss between the protocol and the runner.
      protocolFloor.push(floorMs(opts.dir, 'chain', CN, 2));
      return shWall(`yes /dev/null | head -n ${3 * CN} | xargs -P 2 -n 1 cat`);
    },
  );
  row(
    `chain of 3 \`cat\`, ${CN.toLocaleString('en')} tokens, W=2, start-up included`,
    `the ${(3 * CN).toLocaleString('en')} \`cat\`s by \`xargs -P 2\``,
    chain,
    s,
    '≤ 1.5×',
    chain.ours / chain.floor <= 1.5,
  );
  const protocol = { ...chain, floor: median(protocolFloor) };
  row(
    `the same chain, against the protocol's floor (the floor's own ` +
      `ratio to \`xargs\`: ${(protocol.floor / chain.floor).toFixed(2)}×)`,
    `the same \`cat\`s with the commit's system calls, no fspl (\`floors.mjs chain\`)`,
    protocol,
    s,
    '—',
    '(no target)',
  );

  // ---- JavaScript moves, durable commits, on a disk (fsync on tmpfs is free), and on tmpfs,
  // each against the system calls of the same durable moves with no fspl (bench/floors.mjs moves).
  const JN = Q ? 300 : 3000;
  // In a process of its own (bench/js-moves.mjs), not this one: here V8 has optimised the runner
  // already (the merges above), and the figure would depend on what ran before it. Its first
  // round is what a short script gets, its fourth what a long-lived process gets.
  const jsMoves = async (where) => JSON.parse(timed([NODE, JS_MOVES, where, String(JN), '4'], {}).stdout);
  // The faster of two ways: the outputs one after the other (synchronous calls: the cheapest on
  // tmpfs), or in 4 lanes (a disk's journal takes several fsyncs at once).
  const movesFloor = async (where) => {
    const rates = [1, 4].map((lanes) => JN / (floorMs(where, 'moves', JN, lanes) / 1000));
    return Math.max(...rates);
  };
  const perSecond = (v) => `${Math.round(v).toLocaleString('en')}/s`;
  // Rates: the ratio is the floor's rate over ours (ours takes that many times the floor's time).
  const rateRow = (name, m) =>
    row(
      name,
      "the same durable moves' system calls, no fspl (`floors.mjs moves`)",
      m,
      perSecond,
      '≥ 10,000/s',
      m.ours >= 10_000,
      m.floor / m.ours,
    );
  const disk = ctx.diskDir;
  const cold = {};
  for (const where of [disk, opts.dir]) {
    const m = await measure(
      `JavaScript moves, ${JN} tokens in ${where}`,
      async () => {
        const r = await jsMoves(where);
        (cold[where] ??= []).push(r.cold);
        return r.warm;
      },
      () => movesFloor(where),
    );
    const name =
      where === disk
        ? `JavaScript moves per second (library, a \`fn\` transition, durable commits, in \`${disk}\`; a warm process)`
        : `the same, in \`${where}\` (fsync costs nothing: the runner's own cost)`;
    rateRow(name, m);
  }
  notes.push(
    `JavaScript moves in a fresh process's first run (V8 still compiling the runner): ` +
      `${[disk, opts.dir].map((w) => `${perSecond(median(cold[w]))} in \`${w}\``).join(', ')} (medians).`,
  );

  // ---- Peak RSS with many tokens waiting: `fspl net run --drain` of a chain of 2 moves.
  const sizes = Q ? [1000, 3000] : [30_000, 100_000];
  const rss = {};
  for (const n of sizes) {
    const seed = freshDir('t-rss');
    const { net } = writeNet(
      seed,
      `places: { a: {}, b: {}, c: {} }\ntransitions:\n` +
        `  m1: { in: a, out: b, run: null }\n  m2: { in: b, out: c, run: null }\n`,
    );
    log(`targets: putting ${n} tokens for the RSS rows`);
    await fill(net, 'a', n, () => 'x');
    rss[n] = await measure(`peak RSS, ${n} tokens waiting`, async (i) => {
      const dir = `${seed}-run${i}`;
      fs.cpSync(seed, dir, { recursive: true });
      const t = timed([NODE, BIN, 'net', 'run', '--drain', path.join(dir, 'net.yaml')], { cwd: dir });
      expectAll(path.join(dir, 'places/c'), n, 'RSS (targets)');
      fs.rmSync(dir, { recursive: true, force: true });
      return t.rssKiB / 1024;
    });
    fs.rmSync(seed, { recursive: true, force: true });
  }
  const [lo, hi] = sizes;
  const flat = rss[hi].ours / rss[lo].ours;
  rows.push([
    `peak RSS, ${hi.toLocaleString('en')} tokens waiting (\`fspl net run --drain\`, 2 moves)`,
    `itself at ${lo.toLocaleString('en')}`,
    `${rss[hi].ours.toFixed(0)} MiB`,
    `${rss[lo].ours.toFixed(0)} MiB`,
    `${flat.toFixed(2)}×`,
    '≤ 150 MiB, flat',
    rss[hi].ours <= 150 && flat <= 1.1 ? 'met' : '**missed**',
    `${rss[lo].load}, ${rss[hi].load}`,
  ]);

  return `### Targets of issue 20: the runner against the machine's floor

Each figure is the median of ${rounds} run(s); a floor is the same work with no fspl, measured in
the same run, interleaved with ours round by round; the last column is the 1-minute load average
(/proc/loadavg) before and after the row (2 cores, shared with other work).

${table(['measure', 'floor', 'ours', 'floor', 'ratio', 'target', '', 'load'], rows)}

- Commands in shell form (Jefferson's, the merge's) run with \`SHELL=/bin/sh\`, the shell the floors
  use (a net runs them with \`$SHELL -c\`).
- Jefferson and the chain: \`fspl net run --drain --workers 2\` as a command, its start-up (node,
  loading the net, recovery, the first scan) included; tokens put before, not timed. The floor
  runs every firing's command (\`sh -c 'sleep 0.0N; cat'\` for Jefferson, \`cat\` for the chain) by
  \`xargs -P 2 -n 1\`, with no order between stages: a floor no runner of a pipeline can beat.
- The chain's second floor, the protocol's: \`node bench/floors.mjs chain DIR ${CN} 2\` in \`${opts.dir}\`,
  the same \`cat\`s, 2 at once, each started as the runner starts it (the addon's clone and exec,
  its input token as stdin, stdout and stderr into staging files) and committed with the system
  calls of the commit's table for a group of one (the output created, written, fsynced; the
  directories, seqfiles and journal fsynced; the input unlinked), with nothing else: no decoding,
  scheduling, indexing or per-firing environment. Its loop is timed, Node's start-up left out. The
  chain's ratio to \`xargs\` is the product of the two rows': the protocol's share, then the runner's.
- And-merges: run in the benchmark's process through the library (\`Net.run({ drain: true,
  workers: 2 })\`, the runner of \`fspl net run\`); tokens put crosswise before (all of \`r\`, then all
  of \`l\`), so the whole backlog waits. The runner's CPU is this process's own (\`process.cpuUsage\`:
  user + system, the commands' own CPU left out), over the run, per pair. The event-loop delay is
  \`perf_hooks.monitorEventLoopDelay\` (1 ms resolution) over the run. The floor of the big merge is
  one shell loop running \`sh -c 'cat "$FSPL_IN_l" "$FSPL_IN_r"'\` ${BIG.toLocaleString('en')} times on two small files.
- JavaScript moves: a \`fn\` transition handing its input's payload on, ${JN.toLocaleString('en')} tokens, in
  \`${disk}\` (a disk: fsync on tmpfs costs nothing) and in \`${opts.dir}\`, timed from the run's start to its
  end, in a process of its own (\`bench/js-moves.mjs\`): the 4th of 4 runs, each on a new net, once V8
  has optimised the runner's code (the 1st: in the notes below).
  The floor: \`node bench/floors.mjs moves DIR ${JN} LANES\` in the same directory, the system calls
  of the commit's table for groups of 64 (each output read, created, written and fsynced; the
  directories, seqfiles and journal fsynced as the table says), with nothing else; the faster of
  the outputs one after the other (LANES 1) and in 4 lanes at once (LANES 4). Its ratio is the
  floor's rate over ours: the time ours takes, in floors.
- Peak RSS: \`fspl net run --drain\` (GNU time's maximum resident set size) over a chain of two
  moves (\`run: null\`) with all the tokens waiting in its first place at the start.
${notes.map((n) => `- ${n}`).join('\n')}
`;
}
