/**
 * A running command's stop (src/sys/command-stop.ts): the stoppers of many commands under one
 * AbortSignal share one listener of the signal's; each kills only while its command runs.
 */
import { describe, expect, it } from 'vitest';
import { Stopper } from '../../src/sys/command-stop.js';

describe('Stopper', () => {
  it('under one signal, kills the commands still running when it aborts, each once, and none that ended', () => {
    const stop = new AbortController();
    const killed: string[] = [];
    const a = new Stopper({ stop: stop.signal }, () => killed.push('a'));
    const b = new Stopper({ stop: stop.signal }, () => killed.push('b'));
    const c = new Stopper({ stop: stop.signal }, () => killed.push('c'));
    expect(b.result(0)).toEqual({ ok: true, timedOut: false, stopped: false });
    stop.abort();
    stop.abort();
    expect(killed.sort()).toEqual(['a', 'c']);
    expect(a.result(null)).toEqual({ ok: false, timedOut: false, stopped: true });
    // Succeeded as the stop came: it did its job.
    expect(c.result(0)).toEqual({ ok: true, timedOut: false, stopped: false });
    // Started after the abort: killed at once.
    const late = new Stopper({ stop: stop.signal }, () => killed.push('late'));
    expect(killed).toContain('late');
    expect(late.result(null).stopped).toBe(true);
  });

  it('leaves the signal with one listener of its own, however many commands ran under it', () => {
    const stop = new AbortController();
    let added = 0;
    const add = stop.signal.addEventListener.bind(stop.signal);
    stop.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      added++;
      add(...args);
    }) as typeof add;
    for (let i = 0; i < 100; i++) new Stopper({ stop: stop.signal }, () => undefined).result(0);
    expect(added).toBe(1);
    let kills = 0;
    new Stopper({ stop: stop.signal }, () => kills++);
    stop.abort();
    expect(kills).toBe(1);
  });
});
