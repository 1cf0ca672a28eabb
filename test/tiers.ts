/**
 * The test tiers (vitest projects, vitest.config.ts), named by what they hold. A folder (ending
 * in '/') gives its files a tier; a file named in a tier overrides its folder's. Every
 * test/**\/*.test.ts must have exactly one tier (test/api/tiers.test.ts).
 */
export const TIERS = {
  /** In-process tests of the library: no bin/fspl, no daemons, each file short. */
  unit: [
    'test/json.test.ts',
    'test/structure.test.ts',
    'test/api/',
    'test/base/',
    'test/packet/',
    'test/queue/',
    'test/status/',
    'test/sign/',
    'test/process/',
    'test/sys/',
    'test/web/',
    'test/net/model/',
    'test/net/plan/',
    'test/net/place/',
    'test/net/observe/',
    'test/net/commit/',
    'test/cli/command-line.test.ts',
    'test/cli/v8-tuning.test.ts',
    'test/net/hosts/hosts.test.ts',
    'test/net/run/monitor.test.ts',
    'test/net/run/stats.test.ts',
    'test/net/run/places.test.ts',
    'test/net/run/js-transitions.test.ts',
    'test/net/run/staging.test.ts',
    'test/net/run/firing-env.test.ts',
    'test/send/queue-send-words.test.ts',
  ],
  /**
   * A slice of the CLI tests: each subcommand's main path through bin/fspl, the comparison with the reference on a
   * small scale.
   */
  cli: [
    'test/cli/cli.test.ts',
    'test/cli/usage.test.ts',
    'test/cli/progress.test.ts',
    'test/cli/net-progress.test.ts',
    'test/cli/watch.test.ts',
    'test/cli/queue-process-many.test.ts',
    'test/cli/queue-process-on-finish.test.ts',
    'test/cli/quick.test.ts',
    'test/compat/packets.test.ts',
    'test/compat/vectors.test.ts',
    'test/compat/misc.test.ts',
    'test/send/receive.test.ts',
    'test/send/queue-send-status.test.ts',
    'test/net/compat.test.ts',
    'test/net/monitor-cli.test.ts',
  ],
  /**
   * The rest of the end-to-end tests: the other CLI tests, the comparison in full, nets run by bin/fspl, the longer
   * in-process runs.
   */
  e2e: [
    'test/cli/',
    'test/compat/',
    'test/send/',
    'test/api/docs.test.ts',
    'test/api/types.test.ts',
    'test/net/',
    'test/net/run/',
    'test/net/operate/',
    'test/api/pack.test.ts',
    'test/sign/signed-queue.test.ts',
    'test/process/many-queues.test.ts',
    'test/sys/native.test.ts',
    'test/sys/fs-batch.test.ts',
    'test/net/observe/status.test.ts',
  ],
  /**
   * Crashes, power cuts, injected faults, transports, hostile users, and real daemons (sshd, Syncthing, NNCP, rclone,
   * Chromium).
   */
  soak: [
    'test/powercut/',
    'test/faults/',
    'test/reliability/',
    'test/transports/',
    'test/harness/',
    'test/net/hosts/',
    'test/send/queue-send-nncp.test.ts',
    'test/send/send-queue.test.ts',
    'test/net/commit/group-crash.test.ts',
    'test/net/run/crash.test.ts',
    'test/net/run/users.test.ts',
    'test/net/run/hostile-users.test.ts',
    'test/net/observe/browser.test.ts',
    'test/process/listen-browser.test.ts',
  ],
} as const;

export type Tier = keyof typeof TIERS;
/** The tiers `npm test` runs; `npm run test:all` runs them all. */
export const FAST: Tier[] = ['unit', 'cli'];

/** The tiers that claim `file` (a path from the repository's root): one, unless TIERS is wrong. */
export function tiersOf(file: string): Tier[] {
  const named = (Object.keys(TIERS) as Tier[]).filter((t) => (TIERS[t] as readonly string[]).includes(file));
  if (named.length > 0) return named;
  let best = 0;
  let found: Tier[] = [];
  for (const t of Object.keys(TIERS) as Tier[]) {
    for (const p of TIERS[t]) {
      if (!p.endsWith('/') || !file.startsWith(p) || p.length < best) continue;
      if (p.length > best) found = [];
      best = p.length;
      found.push(t);
    }
  }
  return found;
}
