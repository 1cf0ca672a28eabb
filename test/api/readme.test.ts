/**
 * README.md's top, as a new user reads it: within its first 40 lines, what the project is and the
 * two commands (install and run the example; run the tests), which are the ones .ci/run runs;
 * the quick start run as written, from the checkout; every relative link (and its #anchor) leads
 * somewhere. docs/testing.md, where the test prerequisites live, is linked from that top, and its
 * apt-get line names what .ci/run installs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers.js';

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const readme = read('README.md');
const ci = read('.ci/run');
const top = readme.split('\n').slice(0, 40).join('\n');

/** The lines of a code block, without comments, blank lines or trailing comments. */
function commands(block: string): string[] {
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** Markdown without its fenced code blocks (links and headings there are not links or headings). */
const prose = (md: string) => md.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(md).matchAll(/^#{1,6} (.*)$/gm)) {
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Every relative link of a page (a path from the repository's root, as `file` is) that leads nowhere. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  const md = read(file);
  for (const m of prose(md).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [rel, anchor] = target.split('#') as [string, string | undefined];
    const to = rel === '' ? file : path.normalize(path.join(path.dirname(file), rel));
    if (!fs.existsSync(path.join(ROOT, to))) broken.push(`${target}: no file ${to}`);
    else if (anchor !== undefined && to.endsWith('.md') && !anchors(read(to)).has(anchor))
      broken.push(`${target}: no heading #${anchor} in ${to}`);
  }
  return broken;
}

describe("README.md's first 40 lines", () => {
  it(
    'say what it is: a Filespooler-compatible fspl in ' + 'TypeScript, a library, Petri nets of queues, and for whom',
    () => {
      const intro = top.slice(top.indexOf('\n'), top.indexOf('```')).replace(/\s+/g, ' ');
      expect(intro).toMatch(/This is `fspl`, the command of \[Filespooler\]\([^)]*\), written again in TypeScript\./);
      expect(intro).toMatch(/compatible with Filespooler 1\.2\.2/);
      expect(intro).toMatch(/a Node library/);
      expect(intro).toMatch(/Petri nets of queues/);
      expect(intro).toMatch(/It is for /);
    },
  );

  it('give the two commands: install and run the example, run the tests', () => {
    const block = /```sh\n([\s\S]*?)```/.exec(top)?.[1];
    expect(block, 'a ```sh block within the first 40 lines').toBeDefined();
    expect(commands(block!)).toEqual(['npm ci && npm run example', 'npm test']);
  });

  it('and those commands are the ones .ci/run runs, in a fresh clone', () => {
    const block = /```sh\n([\s\S]*?)```/.exec(top)![1]!;
    const steps = commands(block).flatMap((l) => l.split('&&').map((s) => s.trim()));
    expect(steps).toEqual(['npm ci', 'npm run example', 'npm test']);
    const ciCommands = ci.split('\n').map((l) => l.trim());
    for (const step of steps)
      expect(
        ciCommands.some((l) => l === step || l.startsWith(`${step} `)),
        `.ci/run runs ${step}`,
      ).toBe(true);
    const scripts = JSON.parse(read('package.json')).scripts;
    expect(scripts.example).toBe('bash docs/example.sh');
    expect(read('docs/example.sh')).toMatch(/^echo "example OK"$/m);
  });

  it('link to docs/testing.md, where the test prerequisites are', () => {
    expect(top).toContain('](docs/testing.md)');
    expect(top, 'no apt-get line at the top: it is in docs/testing.md').not.toMatch(/apt-get install/);
  });
});

describe("README.md's quick start", () => {
  const block = /## Quick start\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];

  it('is about ten lines, and names prepare, queue-write, queue-process and queue-status', () => {
    expect(block).toBeDefined();
    const lines = commands(block!);
    expect(lines.length).toBeLessThanOrEqual(12);
    for (const sub of ['prepare', 'queue-write', 'queue-process', 'queue-status'])
      expect(block).toContain(`fspl ${sub} `);
  });

  it('runs as written from the checkout, with its bin/fspl, and shows what its comments say', () => {
    // From the checkout, as the README says; mktemp -d makes its directory under a scratch TMPDIR.
    const tmp = tempDir('fspl-quickstart-');
    const r = spawnSync('sh', ['-ec', block!], {
      cwd: ROOT,
      env: { HOME: tmp, TMPDIR: tmp, PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, LANG: 'C' },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /^ID +creation timestamp +filename\n1 +\S+ +fspl-[0-9a-f-]{36}\.fspl\n2 +\S+ +fspl-[0-9a-f-]{36}\.fspl\n/,
    );
    expect(r.stdout).toMatch(/^state: +ready: 2 jobs can run now$/m);
    expect(r.stdout).toContain('\njob 1: hello\njob 2: world\n');
    expect(r.stdout).toMatch(/^state: +idle: no jobs waiting$/m);
    // It worked in a directory of its own, and left the checkout alone.
    const made = fs.readdirSync(tmp).filter((f) => f.startsWith('tmp.'));
    expect(made.length).toBe(1);
    expect(fs.readdirSync(path.join(tmp, made[0]!)).sort()).toEqual(['queue', 'seq', 'seq.lock']);
    expect(fs.existsSync(path.join(ROOT, 'queue'))).toBe(false);
  });
});

describe('links', () => {
  it.each(['README.md', 'docs/queues.md', 'docs/testing.md'])(
    'every relative link of %s leads to a file (and heading) that exists',
    (file) => {
      expect(brokenLinks(file)).toEqual([]);
    },
  );

  it('the README links to every page of docs/', () => {
    const pages = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    for (const p of pages) expect(readme, `a link to docs/${p}`).toContain(`](docs/${p})`);
  });
});

describe('README.md stays short', () => {
  it('is under 2,500 words: the long parts live in docs/', () => {
    expect(readme.split(/\s+/).filter(Boolean).length).toBeLessThan(2500);
  });
});

describe('docs/testing.md', () => {
  it('its apt-get line installs the packages .ci/run installs, no more and no fewer', () => {
    const ciPackages = [...ci.matchAll(/need\+=\(([^)]*)\)/g)].flatMap((m) => m[1]!.trim().split(/\s+/));
    const line = read('docs/testing.md')
      .split('\n')
      .find((l) => l.startsWith('apt-get install -y '));
    expect(line).toBeDefined();
    expect(line!.slice('apt-get install -y '.length).trim().split(/\s+/).sort()).toEqual(
      [...new Set(ciPackages)].sort(),
    );
  });

  it('names every npm test script of package.json', () => {
    const page = read('docs/testing.md');
    const scripts = Object.keys(JSON.parse(read('package.json')).scripts).filter(
      (s) => s === 'test' || s.startsWith('test:'),
    );
    for (const s of scripts) expect(page, s).toContain(s === 'test' ? '`npm test`' : `\`npm run ${s}\``);
  });
});
