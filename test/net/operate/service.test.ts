/**
 * docs/nets.md, "Running it as a service": the systemd unit passes `systemd-analyze verify` where
 * it is installed (skipped loudly elsewhere, a failure in CI: gate.ts), and the @reboot cron line
 * runs a net under cron's bare environment.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { FSPL_BIN, ROOT } from '../../helpers.js';
import { makeNet, tokensIn } from '../helpers.js';

const page = fs.readFileSync(path.join(ROOT, 'docs', 'nets.md'), 'utf8');
const unit = /```ini\n([\s\S]*?)```/.exec(page)![1]!;
const cron = /```crontab\n(@reboot [^\n]*)\n```/.exec(page)![1]!;

function has(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

test('the unit runs fspl by an absolute path, with node on its PATH, restarted on failure', () => {
  expect(unit).toMatch(/^ExecStart=\/\S+\/fspl net run \/\S+\.yaml/m);
  expect(unit).toMatch(/^Restart=on-failure$/m);
  expect(unit).toMatch(/^Environment=PATH=\/usr\/local\/bin:/m);
  const stop = Number(/--stop-timeout (\d+)/.exec(unit)![1]);
  expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)![1])).toBeGreaterThan(stop);
});

describeIfPresent(
  'systemd-analyze verify',
  has('systemd-analyze') ? [] : ['systemd-analyze'],
  { what: 'systemd unit check' },
  () => {
    test('the unit of docs/nets.md verifies (with this checkout’s fspl as its ExecStart)', () => {
      const { dir } = makeNet('places: { a: {} }\ntransitions: {}\n');
      const file = path.join(dir, 'fspl-video.service');
      fs.writeFileSync(file, unit.replaceAll('/usr/local/bin/fspl', FSPL_BIN).replaceAll('/srv/pipeline', dir));
      const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/fspl-video\.service:/);
    });
  },
);

test('the @reboot cron line runs a net under cron’s environment (PATH=/usr/bin:/bin, nothing else)', async () => {
  const { dir, net } = makeNet(`
places: { in: {}, out: {} }
transitions:
  t: { in: in, run: cat, out: out }
`);
  await net.put('in', Buffer.from('x\n'), { key: 'k' });
  // /usr/local/bin as the line names it: a folder with fspl and node, as an installation has.
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  fs.symlinkSync(FSPL_BIN, path.join(bin, 'fspl'));
  fs.symlinkSync(process.execPath, path.join(bin, 'node'));
  const line = cron
    .slice('@reboot '.length)
    .replaceAll('/usr/local/bin', bin)
    .replaceAll('/srv/pipeline', dir)
    .replace('video.yaml', 'net.yaml --drain'); // the same run, told to stop once drained
  execFileSync('/bin/sh', ['-c', line], {
    env: { PATH: '/usr/bin:/bin', HOME: dir, SHELL: '/bin/sh', LOGNAME: 'cron' },
  });
  expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => t.payload)).toEqual(['x\n']);
  expect(fs.existsSync(path.join(dir, 'video.log'))).toBe(true);
});
