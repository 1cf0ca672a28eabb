/**
 * What the fault tests check once a net has finished: every key once, and no number stranded
 * (every number a place's sendseq handed out is a token or a NOP there, or was consumed), and no
 * file left but tokens and the queues' own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readPacket } from 'filespooler';
import { expect } from 'vitest';

const seqOf = (file: string) => BigInt(fs.readFileSync(file, 'utf8').trim());

/** The numbers and keys of the tokens in a place's jobs/ (a NOP: key undefined). */
export async function tokens(placeDir: string): Promise<Array<{ seq: bigint; key?: string }>> {
  const jobs = path.join(placeDir, 'jobs');
  const out: Array<{ seq: bigint; key?: string }> = [];
  for (const name of fs.readdirSync(jobs)) {
    if (!/^fspl-.*\.fspl$/.test(name)) continue;
    const p = await readPacket({ path: path.join(jobs, name) });
    p.payload.destroy();
    const key = p.env.find(([k]) => Buffer.from(k).toString() === 'KEY');
    out.push({ seq: p.seq, key: p.kind === 'NOP' ? undefined : key ? Buffer.from(key[1]).toString() : '' });
  }
  return out;
}

/** The keys of the tokens (not the NOPs) in a place, sorted, each as often as it is there. */
export async function keysOf(placeDir: string): Promise<string[]> {
  return (await tokens(placeDir))
    .flatMap((t) => (t.key === undefined ? [] : [t.key]))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/**
 * Numbers stranded: in each `inner` place (read by the net, now empty), nextseq has reached
 * sendseq; in each `sinks` place, every number from 1 below sendseq is there once (token or NOP).
 * And no file but tokens and queue files anywhere in the places. Returns how many numbers were
 * stranded (the assertions fail first).
 */
export async function checkNumbers(netDir: string, inner: string[], sinks: string[], label = ''): Promise<void> {
  const places = path.join(netDir, 'places');
  for (const p of inner) {
    const dir = path.join(places, p);
    expect(fs.readdirSync(path.join(dir, 'jobs')), `${label}${p}: left in an inner place`).toEqual([]);
    expect(seqOf(path.join(dir, 'nextseq')), `${label}${p}: nextseq short of sendseq (a number stranded)`).toBe(
      seqOf(path.join(dir, 'sendseq')),
    );
  }
  for (const p of sinks) {
    const dir = path.join(places, p);
    const seqs = (await tokens(dir)).map((t) => t.seq).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const end = seqOf(path.join(dir, 'sendseq'));
    const want = Array.from({ length: Number(end - 1n) }, (_, i) => BigInt(i + 1));
    expect(seqs, `${label}${p}: numbers missing (stranded) or twice`).toEqual(want);
  }
  for (const p of fs.readdirSync(places)) {
    const stray = fs.readdirSync(path.join(places, p, 'jobs')).filter((n) => !/^fspl-.*\.fspl$/.test(n));
    expect(stray, `${label}${p}: files left in jobs/`).toEqual([]);
  }
}
