/** JobsWatcher: what wakes it. No timing assertions: each wake-up source is isolated instead. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobsWatcher } from '../../src/queue/watch.js';
import { tempDir } from '../helpers.js';

describe('JobsWatcher', () => {
  it('wakes on a job renamed into the directory (events; the safety poll is an hour away)', async () => {
    const dir = tempDir();
    const w = new JobsWatcher(dir, { safetyInterval: 3600 });
    try {
      expect(w.mode).toBe('events');
      const woke = w.wait();
      fs.writeFileSync(path.join(dir, 'tmp-fspl-x.fspl.tmp'), 'x');
      fs.renameSync(path.join(dir, 'tmp-fspl-x.fspl.tmp'), path.join(dir, 'fspl-x.fspl'));
      expect(await woke).toBe(true);
    } finally {
      w.close();
    }
  });

  it('remembers a change that came while nobody was waiting', async () => {
    const dir = tempDir();
    const w = new JobsWatcher(dir, { safetyInterval: 3600 });
    try {
      fs.writeFileSync(path.join(dir, 'fspl-y.fspl'), 'y');
      await new Promise((r) => setTimeout(r, 100));
      expect(await w.wait()).toBe(true);
    } finally {
      w.close();
    }
  });

  it('wakes by polling when asked to poll, without events', async () => {
    const dir = tempDir();
    const w = new JobsWatcher(dir, { pollInterval: 0.05 });
    try {
      expect(w.mode).toBe('polling');
      expect(await w.wait()).toBe(true);
      expect(await w.wait()).toBe(true);
    } finally {
      w.close();
    }
  });

  it('falls back to polling when the directory cannot be watched', async () => {
    const warnings: string[] = [];
    const logger = { warn: (_t: string, m: string) => warnings.push(m) } as never;
    const w = new JobsWatcher(path.join(tempDir(), 'missing'), { logger });
    try {
      expect(w.mode).toBe('polling');
      expect(warnings[0]).toMatch(/polling every 1 s instead/);
      expect(await w.wait()).toBe(true);
    } finally {
      w.close();
    }
  });

  it('resolves false when the signal aborts', async () => {
    const w = new JobsWatcher(tempDir(), { safetyInterval: 3600 });
    try {
      const stop = new AbortController();
      const woke = w.wait(stop.signal);
      stop.abort();
      expect(await woke).toBe(false);
      expect(await w.wait(stop.signal)).toBe(false);
    } finally {
      w.close();
    }
  });
});
