/**
 * Every place is a Filespooler queue: the reference fspl lists and reads what a net writes, and
 * a token written by the reference (prepare | queue-write) is picked up by the net.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { makeNet, tokensIn } from './helpers.js';

const REF = '/usr/bin/fspl';
const present = fs.existsSync(REF) ? [] : ['/usr/bin/fspl (Debian package filespooler)'];

describeIfPresent(
  'places are Filespooler queues',
  present,
  { what: 'net compatibility tests', note: 'apt-get install filespooler' },
  () => {
    test(
      'the reference lists a place, reads its tokens ' + 'and their keys, and its own packets enter the net',
      async () => {
        const { dir, net } = makeNet(`
places: { inbox: {}, out: {} }
transitions:
  up: { in: inbox, run: "tr a-z A-Z", out: out }
`);
        const inbox = path.join(dir, 'places/inbox');
        for (let i = 1; i <= 3; i++) await net.put('inbox', Buffer.from(`net ${i}\n`), { key: `n${i}` });
        const ls = spawnSync(REF, ['queue-ls', '-q', inbox], { encoding: 'utf8' });
        expect(ls.status, ls.stderr).toBe(0);
        expect(ls.stdout.trim().split('\n')).toHaveLength(4); // header + 3
        const info = spawnSync(REF, ['queue-info', '-q', inbox, '-j', '2'], { encoding: 'utf8' });
        expect(info.stdout).toContain('FSPL_SET_KEY=n2');
        // A sender using the place's own numbering (its sendseq), with the reference's prepare and queue-write.
        const payload = path.join(dir, 'payload');
        fs.writeFileSync(payload, 'from the reference\n');
        const sent = spawnSync(
          'sh',
          ['-c', `FSPL_SET_KEY=k42 ${REF} prepare -s ${inbox}/sendseq -i ${payload} | ${REF} queue-write -q ${inbox}`],
          {
            encoding: 'utf8',
          },
        );
        expect(sent.status, sent.stderr).toBe(0);
        const summary = await net.run({ drain: true });
        expect(summary.leftovers).toEqual([]);
        const out = await tokensIn(path.join(dir, 'places/out'));
        expect(out.map((t) => [t.key, t.payload])).toEqual([
          ['n1', 'NET 1\n'],
          ['n2', 'NET 2\n'],
          ['n3', 'NET 3\n'],
          ['k42', 'FROM THE REFERENCE\n'],
        ]);
        // The reference reads the results: list, info, and its queue-process runs them.
        const outDir = path.join(dir, 'places/out');
        expect(spawnSync(REF, ['queue-ls', '-q', outDir], { encoding: 'utf8' }).stdout.trim().split('\n')).toHaveLength(
          5,
        );
        const ran = spawnSync(
          REF,
          ['queue-process', '-q', outDir, 'sh', '--', '-c', 'printf "%s:" "$FSPL_SET_KEY"; cat'],
          { encoding: 'utf8' },
        );
        expect(ran.status, ran.stderr).toBe(0);
        expect(ran.stdout).toBe('n1:NET 1\nn2:NET 2\nn3:NET 3\nk42:FROM THE REFERENCE\n');
      },
    );

    test('while a net runs, the reference queue-process is locked out of the places it reads', async () => {
      const { dir, net } = makeNet(`
places: { inbox: {}, out: {} }
transitions:
  t: { in: inbox, run: [cat], out: out }
`);
      const controller = new AbortController();
      const running = net.run({ signal: controller.signal });
      await new Promise((r) => setTimeout(r, 300));
      const r = spawnSync(REF, ['queue-process', '-q', path.join(dir, 'places/inbox'), 'true'], { encoding: 'utf8' });
      expect(r.status).not.toBe(0);
      controller.abort();
      await running;
    });
  },
);
