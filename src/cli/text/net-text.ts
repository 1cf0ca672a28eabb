/** `fspl net status` as text and as JSON (schema in docs/json.md). */
import type { NetStatusReport } from '../../index.js';

export function age(ms: number | undefined): string {
  if (ms === undefined) return '-';
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The NOTE column of a place: its problem or note, and the tokens refused for their signature. */
function placeNote(p: NetStatusReport['places'][number]): string {
  const refused = p.refused ? `${p.refused} refused (signature), set aside` : undefined;
  return [p.problem ?? p.note, refused].filter((x) => x).join('; ');
}

export function formatNetStatus(r: NetStatusReport): string {
  const out: string[] = [];
  out.push(`net ${r.net}: ${r.state}${r.live ? ` (run pid ${r.pid})` : ' (no run going)'}`);
  for (const n of r.notes ?? []) out.push(`note: ${n.text}`);
  for (const f of r.ioFaults ?? []) out.push(`disk: ${ioFaultText(f, r.at)}`);
  out.push('');
  const placeRows = [['PLACE', 'ROLE', 'TOKENS', 'OLDEST', 'CAPACITY', 'NOTE']];
  for (const p of r.places) {
    placeRows.push([
      p.name,
      p.role,
      String(p.tokens),
      age(p.oldestAgeMs),
      p.capacity === undefined ? '-' : `${p.capacity}`,
      placeNote(p),
    ]);
  }
  out.push(table(placeRows));
  out.push('');
  const tRows = [['TRANSITION', 'RUNNING', 'FIRED', 'FAILED', 'RETRIED', 'MERGES WAITING', 'NOTE']];
  for (const t of r.transitions) {
    tRows.push([
      t.name,
      String(t.running),
      String(t.fired),
      String(t.failed),
      String(t.retried),
      String(t.waitingMerges),
      t.stopped ? `STOPPED: ${t.stopped.reason}; log ${t.stopped.log}` : t.paused ? t.paused.text : '',
    ]);
  }
  out.push(table(tRows));
  tokenList(out, r.stuck, () => `can't fire:`, 50);
  tokenList(out, r.waiting, (one) => `${one ? 'waits' : 'wait'} for what can still come:`, 20);
  return `${out.join('\n')}\n`;
}

/** A place's full disk or I/O error, as status says it. */
export function ioFaultText(f: NonNullable<NetStatusReport['ioFaults']>[number], now: number): string {
  const where = f.place === '(state)' ? 'the state directory' : `place ${f.place}`;
  return (
    `${where}: ${f.message} (${f.code}) since ${new Date(f.since).toISOString()} ` +
    `(${age(now - f.since)} ago, ${f.count} time${f.count === 1 ? '' : 's'}); ` +
    `what needs it waits and tries again`
  );
}

/** Tokens with their reasons, the first `max` of them. */
function tokenList(out: string[], list: NetStatusReport['stuck'], title: (one: boolean) => string, max: number): void {
  if (list.length === 0) return;
  out.push('');
  out.push(`${list.length} token${list.length === 1 ? '' : 's'} ${title(list.length === 1)}`);
  for (const l of list.slice(0, max)) out.push(`  ${l.place} #${l.seq} key ${l.key}: ${l.reason}`);
  if (list.length > max) out.push(`  ... and ${list.length - max} more`);
}
