/**
 * The package as npm publishes it: `npm pack`, installed into a scratch project, then loaded with
 * import and with require (Node >= 20.19 loads an ES module through require() when "exports"
 * lets it), its CLI run, and a TypeScript consumer compiled under the node16, nodenext and
 * bundler resolutions. A file missing from "files" or an undeclared dependency fails here.
 *
 * Installing: the test must not download anything, so instead of `npm install` the tarball is
 * unpacked into the scratch project's node_modules/filespooler (what npm does for a tarball), and
 * each dependency the packed package.json declares is a symlink to this repository's copy (its
 * own dependencies then resolve from there). Only declared dependencies are linked, so an import
 * of an undeclared package fails as it would for a user. Scripts are not run (`--ignore-scripts`):
 * the native addon is optional and dist/ is already built by the test scripts.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

const run = promisify(execFile);
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let project: string;
let tarball: string;
let pkg: { name: string; version: string; dependencies?: Record<string, string> };

function link(name: string, from: string): void {
  const to = path.join(project, 'node_modules', name);
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.symlinkSync(from, to, 'dir');
}

beforeAll(() => {
  // Not helpers' tempDir(): that one is removed after each test, and this lives for the file.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-pack-'));
  project = path.join(dir, 'consumer');
  // --ignore-scripts: no "prepare" rebuild of dist/ while other test files use it.
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  tarball = path.join(dir, out.trim().split('\n').pop()!);
  const installed = path.join(project, 'node_modules', 'filespooler');
  fs.mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  pkg = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
  for (const dep of Object.keys(pkg.dependencies ?? {})) link(dep, path.join(ROOT, 'node_modules', dep));
  link('@types/node', path.join(ROOT, 'node_modules', '@types', 'node')); // for the TS consumer only
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'commonjs' }),
  );
}, 120_000);

afterAll(() => {
  if (project) fs.rmSync(path.dirname(project), { recursive: true, force: true });
});

async function node(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, args, { cwd: project, encoding: 'utf8' });
}

describe('the packed package', () => {
  it('is named and versioned as package.json says', () => {
    expect(pkg.name).toBe('filespooler');
  });

  it('loads with require() from CommonJS', async () => {
    const { stdout, stderr } = await node([
      '-e',
      "const f = require('filespooler'); console.log(typeof f.Queue, typeof f.preparePacket, typeof f.encodeHeader)",
    ]);
    expect(stdout).toBe('function function function\n');
    expect(stderr).toBe('');
  });

  it('loads with import from an ES module, the same module as require() gives', async () => {
    const { stdout } = await node([
      '--input-type=module',
      '-e',
      "import { createRequire } from 'node:module'; const f = await import('filespooler'); const r = " +
        "createRequire(process.cwd() + '/x.cjs')('filespooler'); console.log(typeof f.Queue, f.Queue " +
        '=== r.Queue)',
    ]);
    expect(stdout).toBe('function true\n');
  });

  it(
    'has a lower-level entry point, filespooler/lowlevel, holding the ' +
      'main one too, and filespooler/net, the operator tooling, apart',
    async () => {
      const { stdout } = await node([
        '--input-type=module',
        '-e',
        "const main = await import('filespooler'); const low = await import('filespooler/lowlevel'); const net " +
          "= await import('filespooler/net'); const req = (await " +
          "import('node:module')).createRequire(process.cwd() + '/x.cjs'); console.log(typeof low.SeqFile, typeof " +
          "low.processQueue, low.Queue === main.Queue, req('filespooler/lowlevel').FileLock === low.FileLock, " +
          "'SeqFile' in main, typeof net.serveNet, typeof net.simulate, req('filespooler/net').dotToSvg === " +
          "net.dotToSvg, 'serveNet' in main, 'simulate' in main)",
      ]);
      expect(stdout).toBe('function function true true false function function true false false\n');
    },
  );

  it('runs its CLI from the installed files', async () => {
    const { stdout } = await node([
      path.join('node_modules', 'filespooler', 'bin', 'fspl'),
      'prepare-get-next',
      '-s',
      path.join(project, 'seq'),
    ]);
    expect(stdout).toBe('1\n');
  });

  // The API consumer test/api/consumer.ts (an ES module) compiled against the installed types under
  // each resolution a TypeScript user may choose; a CommonJS consumer under nodenext, which models
  // Node's require() of ES modules (node16 does not, and refuses it by design).
  const consumer = fs.readFileSync(path.join(ROOT, 'test', 'api', 'consumer.ts'), 'utf8');
  const cjsConsumer =
    "import fspl = require('filespooler');\n" +
    'export const open = (dir: string): InstanceType<typeof fspl.Queue> => fspl.Queue.open(dir);\n';
  const modes: Array<[string, string, string, string]> = [
    ['node16', 'node16', 'node16', 'consumer.mts'],
    ['nodenext', 'nodenext', 'nodenext', 'consumer.mts'],
    ['bundler', 'esnext', 'bundler', 'consumer.ts'],
    ['nodenext (CommonJS, require)', 'nodenext', 'nodenext', 'consumer.cts'],
  ];
  it.each(modes)('typechecks a TypeScript consumer under %s', async (_name, module, resolution, file) => {
    const dir = path.join(project, `ts-${resolution}-${file.replace('.', '-')}`);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, file), file.endsWith('.cts') ? cjsConsumer : consumer);
    const args = [
      TSC,
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      'false',
      '--target',
      'es2022',
      '--lib',
      'es2022',
      '--types',
      'node',
    ];
    args.push('--module', module, '--moduleResolution', resolution, path.join(dir, file));
    let out = '';
    try {
      await run(process.execPath, args, { cwd: project, encoding: 'utf8' });
    } catch (err) {
      out = String((err as { stdout?: string }).stdout || err);
    }
    expect(out).toBe('');
  });
});

/**
 * README.md's install: the packed package installed globally, as a copy, so that the clone can
 * move or go (`npm install -g .` would link to it). Run as written, with `--prefix` (a scratch
 * global directory) and `--prefer-offline` (the dependencies from npm's cache, where `npm ci` left
 * their tarballs; only their registry documents, which `npm ci` does not keep, may be fetched on a
 * fresh machine: with `--offline` the install failed there with ENOTCACHED).
 */
describe("README's install", () => {
  it("leaves no untracked file behind: npm pack's tarball is ignored", () => {
    const r = spawnSync('git', ['check-ignore', '-q', 'filespooler-0.1.0.tgz'], { cwd: ROOT });
    // Outside a git checkout (a tarball of the sources) there is nothing to keep clean.
    if (!fs.existsSync(path.join(ROOT, '.git'))) return;
    expect(r.status).toBe(0);
  });

  it('installs a copy: nothing of it leads back into the clone, and fspl runs from it', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const block = /## Install\n\n```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    const install = block
      .split('\n')
      .find((l) => l.startsWith('npm install -g'))!
      .replace(/#.*/, '')
      .trim();
    expect(install.split(/\s+/).at(-1), 'the tarball npm pack makes').toBe(`./${path.basename(tarball)}`);
    const prefix = path.join(path.dirname(project), 'global');
    // In the directory where npm pack left the tarball, as the README runs it.
    const r = spawnSync('sh', ['-c', `${install} --prefix "${prefix}" --prefer-offline --no-audit --no-fund`], {
      cwd: path.dirname(tarball),
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr, 'every install script it runs is named by --allow-scripts').not.toMatch(/install-scripts/);
    const installed = path.join(prefix, 'lib', 'node_modules', 'filespooler');
    const fsplBin = path.join(prefix, 'bin', 'fspl');
    expect(fs.realpathSync(fsplBin)).toBe(path.join(fs.realpathSync(installed), 'bin', 'fspl'));
    const links = execFileSync('find', [installed, '-type', 'l'], { encoding: 'utf8' }).split('\n').filter(Boolean);
    const intoClone = links.filter((l) => fs.realpathSync(l).startsWith(fs.realpathSync(ROOT) + path.sep));
    expect(intoClone).toEqual([]);
    expect(fs.existsSync(path.join(prefix, 'share', 'man', 'man1', 'fspl.1'))).toBe(true);
    const which = spawnSync(fsplBin, ['--implementation'], {
      cwd: os.tmpdir(),
      encoding: 'utf8',
      env: { ...process.env, PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` },
    });
    expect([which.status, which.stderr]).toEqual([0, '']);
    expect(which.stdout).toContain(`filespooler ${pkg.version}, the TypeScript fspl`);
    expect(which.stdout).toContain(`-> ${fs.realpathSync(installed)}/bin/fspl`);
  }, 180_000);

  it('npm ci runs no install script that allowScripts does not name (npm 11 would warn)', () => {
    const r = spawnSync('npm', ['install-scripts', 'ls', '--json'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ allowScripts: [] });
  });
});

/**
 * docs/queues.md's cron and systemd lines ("With synced folders": the page's first of each), run
 * as cron and systemd would run them, against the packed package installed as `npm install -g`
 * lays it out (PREFIX/bin/fspl, a symlink to PREFIX/lib/node_modules/filespooler/bin/fspl; here,
 * the package unpacked above). Cron runs a line with `/bin/sh -c`, with HOME, LOGNAME,
 * SHELL=/bin/sh and the crontab's PATH (or /usr/bin:/bin) and nothing else; systemd runs
 * ExecStart directly, with the unit's Environment=. The page's /usr/local/bin stands for npm's
 * global bin, here PREFIX/bin, which also holds the handler.
 */
describe("docs/queues.md's cron and systemd lines", () => {
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'queues.md'), 'utf8');
  const block = (lang: string): string[] => {
    const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(page);
    expect(m, `a \`\`\`${lang} block in docs/queues.md`).not.toBeNull();
    return m![1]!.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
  };
  let home = '';
  let bin = '';
  const local = (s: string) => s.replaceAll('/usr/local/bin/', `${bin}/`);
  /** A PATH as the page writes it, with PREFIX/bin where it names /usr/local/bin. */
  const localPath = (p: string): string => {
    const dirs = p.split(':').flatMap((d) => (d === '/usr/local/bin' ? [bin, d] : [d]));
    // The page says to name node's directory too; it is there already unless node lives outside them.
    if (!dirs.includes(path.dirname(process.execPath))) dirs.push(path.dirname(process.execPath));
    return dirs.join(':');
  };
  const queueJob = (payload: string) =>
    execFileSync(
      'sh',
      [
        '-c',
        `"${process.execPath}" "${bin}/fspl" prepare -s "${home}/seq" -i - ` +
          `| "${process.execPath}" "${bin}/fspl" queue-write -q "${home}/queue"`,
      ],
      { input: payload },
    );

  beforeAll(() => {
    home = path.join(path.dirname(project), 'home');
    bin = path.join(path.dirname(project), 'prefix', 'bin');
    fs.mkdirSync(home);
    fs.mkdirSync(bin, { recursive: true });
    fs.symlinkSync(path.join(project, 'node_modules', 'filespooler', 'bin', 'fspl'), path.join(bin, 'fspl'));
    fs.writeFileSync(path.join(bin, 'handler'), '#!/bin/sh\ncat > "$HOME/ran-$FSPL_SEQ"\n', { mode: 0o755 });
    execFileSync(process.execPath, [path.join(bin, 'fspl'), 'queue-init', '-q', path.join(home, 'queue')]);
  });

  it("the crontab line runs our fspl and the handler in cron's environment", () => {
    const lines = block('cron');
    const pathLine = lines.find((l) => l.startsWith('PATH='));
    expect(
      pathLine,
      "a PATH= line: cron gives /usr/bin:/bin, which holds neither npm's global bin nor every node",
    ).toBeDefined();
    const job = lines.find((l) => /^\S+ \S+ \S+ \S+ \S+ /.test(l))!;
    const command = local(job.split(' ').slice(5).join(' '));
    const env = {
      HOME: home,
      LOGNAME: 'fspl-test',
      SHELL: '/bin/sh',
      PATH: localPath(pathLine!.slice('PATH='.length)),
    };
    expect(execFileSync('/bin/sh', ['-c', 'command -v fspl'], { env, encoding: 'utf8' })).toBe(`${bin}/fspl\n`);
    queueJob('from cron\n');
    const r = spawnSync('/bin/sh', ['-c', command], { env, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(home, 'ran-1'), 'utf8')).toBe('from cron\n');
  });

  it('the systemd unit runs in an environment of its Environment= lines alone', () => {
    const lines = block('ini');
    const pathLine = lines.find((l) => l.startsWith('Environment=PATH='));
    expect(pathLine, 'Environment=PATH=: fspl starts with #!/usr/bin/env node').toBeDefined();
    const argv = local(lines.find((l) => l.startsWith('ExecStart='))!.slice('ExecStart='.length))
      .replaceAll('%h', home)
      .split(' ');
    queueJob('from systemd\n');
    const r = spawnSync(argv[0]!, argv.slice(1), {
      env: { HOME: home, PATH: localPath(pathLine!.slice('Environment=PATH='.length)) },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(home, 'ran-2'), 'utf8')).toBe('from systemd\n');
  });
});
