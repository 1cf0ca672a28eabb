/**
 * `net init --host` and `net status --host` on the two-host net of docs/distributed.md, without
 * connecting anywhere (nothing here needs ssh): the roles and notes of places that cross hosts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { netDir, runFspl } from '../helpers.js';

const NET = `
hosts:
  a: {}
  b: {}
places:
  src:  { host: a }
  mid:  { host: b }
  done: { host: a }
transitions:
  ship: { host: a, in: src, out: mid }
  work: { host: b, in: mid, run: "tr a-z A-Z", out: done }
`;

interface PlaceJson {
  name: string;
  role: string;
  exists: boolean;
  problem?: string;
  note?: string;
  fedBy?: { host: string; via: string };
  outbox?: { host: string; via: string; waiting: number; empty?: boolean };
}

async function status(file: string, host: string): Promise<{ text: string; places: Map<string, PlaceJson> }> {
  const text = await runFspl(['net', 'status', file, '--host', host]);
  expect(text.stderr).toBe('');
  const json = await runFspl(['net', 'status', file, '--host', host, '--json']);
  const places = (JSON.parse(json.stdout) as { places: PlaceJson[] }).places;
  return { text: text.stdout, places: new Map(places.map((p) => [p.name, p])) };
}

/** The place's row of the text table, columns split on runs of two spaces or more. */
function row(text: string, place: string): string[] {
  const line = text.split('\n').find((l) => l.startsWith(`${place} `));
  expect(line, `${place} in\n${text}`).toBeDefined();
  return line!.split(/ {2,}/);
}

describe('net status --host on a net across hosts', () => {
  test(
    'init --host makes the outboxes; a place fed from another ' +
      'host is an inbox, or a sink when nothing here reads it',
    async () => {
      const dir = netDir();
      const file = path.join(dir, 'net.yaml');
      fs.writeFileSync(file, NET);
      expect((await runFspl(['net', 'init', file, '--host', 'a'])).stdout).toBe(
        'created place src\ncreated place done\ncreated outbox mid (its tokens leave for host b)\n',
      );
      expect((await runFspl(['net', 'init', file, '--host', 'b'])).stdout).toBe(
        'created place mid\ncreated outbox done (its tokens leave for host a)\n',
      );
      // Again: nothing more to make.
      expect((await runFspl(['net', 'init', file, '--host', 'a'])).stdout).toBe('');
      expect(fs.existsSync(path.join(dir, 'net.state/a/outbox/mid/jobs'))).toBe(true);

      const a = await status(file, 'a');
      expect(row(a.text, 'src').slice(0, 2)).toEqual(['src', 'source']);
      const mid = row(a.text, 'mid');
      expect(mid[1]).toBe('outbox');
      expect(mid.at(-1)).toBe(`outbox to b:${path.join(dir, 'places/mid')}: 0 waiting; nothing sent yet`);
      // done is written from b and read by nobody on a: a sink, and it says who writes it.
      expect(row(a.text, 'done')).toEqual(['done', 'sink', '0', '-', '-', 'written by host b (outbox)']);
      expect(a.places.get('done')).toMatchObject({
        role: 'sink',
        fedBy: { host: 'b', via: 'ssh' },
        note: 'written by host b (outbox)',
      });
      expect(a.places.get('mid')).toMatchObject({
        role: 'outbox',
        exists: true,
        outbox: { host: 'b', via: 'ssh', waiting: 0 },
      });
      expect(a.places.get('mid')!.problem).toBeUndefined();

      const b = await status(file, 'b');
      // mid is written by a's outbox and read by work here: an inbox.
      expect(row(b.text, 'mid')).toEqual(['mid', 'inbox', '0', '-', '-', 'written by host a (outbox)']);
      expect(b.places.get('mid')).toMatchObject({ role: 'inbox', fedBy: { host: 'a', via: 'ssh' } });
      expect(row(b.text, 'done')[1]).toBe('outbox');
    },
  );

  test('an unknown --host: one line and exit 2 (a bad request), before anything is said to be ok', async () => {
    const dir = netDir();
    const file = path.join(dir, 'net.yaml');
    fs.writeFileSync(file, NET);
    for (const cmd of ['check', 'status', 'init']) {
      const r = await runFspl(['net', cmd, file, '--host', 'zzz']);
      expect(r.stdout, cmd).toBe('');
      expect(r.stderr, cmd).toBe('Error: Unknown host "zzz": the net\'s hosts are a, b\n');
      expect(r.status, cmd).toBe(2);
    }
  });

  test(
    'an outbox not made yet (a host initialised by an ' + 'older fspl) is "nothing sent yet", not a missing queue',
    async () => {
      const dir = netDir();
      const file = path.join(dir, 'net.yaml');
      fs.writeFileSync(file, NET);
      await runFspl(['net', 'init', file, '--host', 'a']);
      fs.rmSync(path.join(dir, 'net.state/a/outbox'), { recursive: true });
      const a = await status(file, 'a');
      expect(a.text).not.toMatch(/no queue/);
      expect(row(a.text, 'mid').at(-1)).toBe(
        `outbox to b:${path.join(dir, 'places/mid')}: 0 waiting; nothing sent yet`,
      );
      expect(a.places.get('mid')).toMatchObject({ role: 'outbox', exists: false, outbox: { empty: true } });
      expect((await runFspl(['net', 'status', file, '--host', 'a'])).status).toBe(0);
    },
  );
});
