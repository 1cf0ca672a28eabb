/**
 * JavaScript transitions' inputs and outputs: a payload read whole or streamed (payloadStream),
 * a returned value kept in memory and written straight into its token at commit, a larger one
 * through a staging file, and nothing left in staging afterwards.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { fnNet, makeNet, strayFiles, tokensIn } from '../helpers.js';

async function text(r: Readable): Promise<string> {
  let t = '';
  for await (const c of r) t += c;
  return t;
}

describe('net run: JavaScript transitions', () => {
  test('small and large payloads read in full; strings, ' +
    'buffers, streams and nothing returned become tokens', async () => {
    const { dir, net } = makeNet(`places: { a: {}, b: {} }\ntransitions: {}\n`);
    const big = `${'x'.repeat(200 * 1024)}end`;
    const huge = Buffer.alloc(300_000, 'h'); // beyond what is kept in memory: a staging file
    const inputs: Record<string, string> = {
      s: 'small',
      e: '',
      b: big,
      buf: 'buffer',
      st: 'stream',
      none: 'n',
      h: 'huge',
    };
    for (const [key, payload] of Object.entries(inputs)) await net.put('a', Buffer.from(payload), { key });
    const js = fnNet(dir, async (ctx) => {
      const got = await text(ctx.inputs[0]!.payload());
      if (ctx.key === 'buf') return Buffer.from(`${ctx.key}:${got}`);
      if (ctx.key === 'st') return Readable.from([Buffer.from(`${ctx.key}:`), Buffer.from(got)]);
      if (ctx.key === 'none') return undefined;
      if (ctx.key === 'h') return huge;
      return `${ctx.key}:${got.length}:${got.slice(-3)}`;
    });
    const summary = await js.run({ drain: true });
    expect(summary.fired).toBe(7);
    const out = Object.fromEntries((await tokensIn(path.join(dir, 'places/b'))).map((t) => [t.key, t.payload]));
    expect(out).toEqual({
      s: 's:5:all',
      e: 'e:0:',
      b: `b:${big.length}:end`,
      buf: 'buf:buffer',
      st: 'st:stream',
      none: '',
      h: huge.toString(),
    });
    expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
    expect(strayFiles(dir)).toEqual([]);
  }, 60_000);

  test("a failing function's message is its error; its staging is removed", async () => {
    const { dir, net } = makeNet(`places: { a: {}, b: {}, err: {} }\ntransitions: {}\n`);
    await net.put('a', Buffer.from('p'), { key: 'k' });
    const { Net } = await import('filespooler');
    const js = Net.define({
      dir,
      places: { a: {}, b: {}, err: {} },
      transitions: {
        t: {
          in: 'a',
          out: 'b',
          error: 'err',
          fn: async () => {
            throw new Error('no luck');
          },
        },
      },
    });
    await js.run({ drain: true });
    const [e] = await tokensIn(path.join(dir, 'places/err'));
    expect(e!.env.ERROR_STDERR).toContain('no luck');
    expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
  }, 60_000);

  test('a payload asked for twice comes whole both times, even when the first reader changed its chunks', async () => {
    const { dir, net } = makeNet(`places: { a: {}, b: {} }\ntransitions: {}\n`);
    await net.put('a', Buffer.from('abc'), { key: 'k' });
    const js = fnNet(dir, async (ctx) => {
      for await (const chunk of ctx.inputs[0]!.payload()) (chunk as Buffer).fill(0x78);
      return text(ctx.inputs[0]!.payload());
    });
    await js.run({ drain: true });
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['abc']);
  }, 60_000);

  test("a function's signal says why it was aborted: the run's stop, or its " +
    'timeout; its token stays for the one, goes to the error place for the other', async () => {
    const { dir, net } = makeNet(`places: { a: {}, b: {}, err: {} }\ntransitions: {}\n`);
    await net.put('a', Buffer.from('p'), { key: 'k' });
    const reasons: string[] = [];
    // Waits for its signal, whatever it is, and says its reason.
    const waiting = async (ctx: { signal: AbortSignal }) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      reasons.push((ctx.signal.reason as Error).message);
      return 'never';
    };
    const stop = new AbortController();
    const stopped = await fnNet(dir, waiting).run({
      signal: stop.signal,
      grace: 0.05,
      onEvent: (e) => e.type === 'start' && stop.abort(),
    });
    expect(stopped.fired).toBe(0);
    expect(reasons).toEqual(['the run is stopping']);
    expect((await tokensIn(path.join(dir, 'places/a'))).map((t) => t.key)).toEqual(['k']);

    const { Net } = await import('filespooler');
    const timed = Net.define({
      dir,
      places: { a: {}, b: {}, err: {} },
      transitions: { t: { in: 'a', out: 'b', error: 'err', timeout: 0.05, fn: waiting } },
    });
    await timed.run({ drain: true });
    expect(reasons).toEqual(['the run is stopping', 'timed out after 0.05 s']);
    const [e] = await tokensIn(path.join(dir, 'places/err'));
    expect(e!.env.ERROR_REASON).toContain('timed out after 0.05 s');
    expect(strayFiles(dir)).toEqual([]);
  }, 60_000);
});
