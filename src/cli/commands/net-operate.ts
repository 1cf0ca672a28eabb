/** `fspl net ls`, `net show` and `net retry` as text (and JSON lines): what they print, token by token. */
import { pipeline } from 'node:stream/promises';
import type { Net } from '../../index.js';
import type { RetryResult, TokenListing } from '../../lowlevel.js';
import { age } from '../text/net-text.js';
import { writeOut } from '../text/output.js';

const bigintText = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/** One line per token, tab-separated (streamed: no column is padded to the widest), or JSON lines. */
export async function printTokens(net: Net, place: string, json: boolean, host?: string): Promise<void> {
  const tokens = net.tokens(place, { host }); // a bad place or host is refused here, before the header
  if (!json) writeOut('SEQ\tKEY\tAGE\tSIZE\tPARAMS\tRETRIED\tERROR\n');
  for await (const t of tokens) {
    if (json) {
      const { path: _path, ...rest } = t;
      writeOut(`${JSON.stringify(rest, bigintText)}\n`);
    } else if (t.nop) writeOut(`${t.seq}\t-\t${age(t.ageMs)}\t${t.size}\t(NOP)\t\t\n`);
    else
      writeOut(
        `${t.seq}\t${t.key}\t${age(t.ageMs)}\t${t.size}\t${t.params.join(' ')}\t${t.retried || ''}\t${errorText(t)}\n`,
      );
  }
}

function errorText(t: TokenListing): string {
  return t.error ? `failed in ${t.error.transition}: ${t.error.reason.replace(/\s+/g, ' ')}` : '';
}

/** A token's description, or with `payload` its payload alone (to pipe). */
export async function printToken(
  net: Net,
  place: string,
  which: { key?: string; seq?: bigint },
  payload: boolean,
  host?: string,
): Promise<void> {
  const t = await net.token(place, which, { host });
  if (payload) {
    await pipeline(t.payload(), process.stdout, { end: false });
    return;
  }
  const lines = [
    `place ${place}, number ${t.seq}, key ${t.key}`,
    `file ${t.path} (${t.size} bytes, ${age(t.ageMs)} old)`,
    `params ${t.params.length ? t.params.map((p) => JSON.stringify(p)).join(' ') : '(none)'}`,
  ];
  if (t.retried) lines.push(`retried ${t.retried} time${t.retried === 1 ? '' : 's'}`);
  if (t.error)
    lines.push(
      `failed in ${t.error.transition}${t.error.place ? `, taken from ${t.error.place}` : ''}: ${t.error.reason}`,
      `log ${t.error.log ?? '(none)'}`,
    );
  lines.push('variables:', ...Object.entries(t.vars).map(([k, v]) => `  ${k}=${JSON.stringify(v)}`));
  writeOut(`${lines.join('\n')}\n`);
}

/** One line per token moved (or, in a dry run, that would move). */
export function printRetry(r: RetryResult): void {
  for (const m of r.moves) {
    const to = m.to.seq === undefined ? m.to.place : `${m.to.place} #${m.to.seq}`;
    const what = m.transition ? ` (${m.transition}, RETRIED=${m.retried})` : ''; // none: a token set aside coming back
    writeOut(`${r.dryRun ? 'would move' : 'moved'} ${m.key}: ${m.from.place} #${m.from.seq} -> ${to}${what}\n`);
  }
  if (r.moves.length === 0) writeOut('no error token to retry\n');
}
