/** The text report of `fspl net simulate`. */
import type { SimulationReport } from '../../net-tools.js';

const ms = (v: number) =>
  v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(1)} ms`;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return `${rows
    .map((r) =>
      r
        .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

export function formatSimulation(r: SimulationReport): string {
  let out =
    `${r.tokens} token${r.tokens === 1 ? '' : 's'} per source, ${r.workers} ` +
    `worker${r.workers === 1 ? '' : 's'} (virtual time)\n`;
  out += `makespan     ${ms(r.makespan)}\n`;
  const ofBound = r.lowerBound > 0 ? ` (makespan ${(r.makespan / r.lowerBound).toFixed(3)}x the bound)` : '';
  out += `lower bound  ${ms(r.lowerBound)}${ofBound}\n`;
  if (r.leftover > 0) out += `left over    ${r.leftover} token${r.leftover === 1 ? '' : 's'} that can never fire\n`;
  out += '\n';
  out += table([
    ['transition', 'service', 'firings', 'busy', 'share'],
    ...Object.entries(r.transitions).map(([name, t]) => [
      name,
      ms(t.service.mean) +
        (t.service.jitter ? ` ±${Math.round(t.service.jitter * 100)}%` : '') +
        (t.assumed ? ' (assumed)' : ''),
      String(t.firings),
      ms(t.busyMs),
      `${(t.share * 100).toFixed(1)}%`,
    ]),
  ]);
  out += '\n';
  out += table([
    ['place', 'peak', 'capacity', 'left'],
    ...Object.entries(r.places).map(([name, p]) => [
      name,
      String(p.peak),
      p.capacity === undefined ? '-' : String(p.capacity),
      String(p.final),
    ]),
  ]);
  return out;
}
