/** Shared by the tests of the Prometheus format (prometheus.test.ts) and of net serve's /metrics. */
// ---------------------------------------------------------------------------------------------
// A strict reader of the text format 0.0.4, written from the format's description (lines, HELP
// and TYPE comments, sample grammar, escapes), independent of the formatter. It is stricter than
// the format in three ways: every sample's family must have a TYPE line, label names starting
// with "__" are refused, and values must be decimal, Inf or NaN (Go's reader also takes hex).

export interface ParsedSample {
  name: string;
  labels: [string, string][];
  value: string;
  timestamp?: string;
}
export interface ParsedFamily {
  name: string;
  help?: string;
  type?: string;
  samples: ParsedSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
export const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity)|nan)$/i;
const TIMESTAMP = /^-?\d+$/;
const KNOWN_TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export class ExpositionError extends Error {}

export function parseExposition(text: string): ParsedFamily[] {
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new ExpositionError('the last line does not end in a newline');
  const lines = text.slice(0, -1).split('\n');
  const families = new Map<string, ParsedFamily>();
  const closed = new Set<string>();
  let current: string | undefined;
  const series = new Set<string>();

  const enter = (name: string, n: number): ParsedFamily => {
    if (name !== current) {
      if (current !== undefined) closed.add(current);
      if (closed.has(name)) throw new ExpositionError(`line ${n}: lines of ${name} are not together`);
      current = name;
    }
    let f = families.get(name);
    if (!f) {
      f = { name, samples: [] };
      families.set(name, f);
    }
    return f;
  };

  lines.forEach((raw, i) => {
    const n = i + 1;
    const bad = (why: string): never => {
      throw new ExpositionError(`line ${n}: ${why}: ${JSON.stringify(raw)}`);
    };
    let pos = 0;
    const blanks = () => {
      const start = pos;
      while (raw[pos] === ' ' || raw[pos] === '\t') pos++;
      return pos - start;
    };
    const token = (re: RegExp, what: string) => {
      const m = re.exec(raw.slice(pos));
      if (!m) bad(`expected ${what}`);
      pos += (m as RegExpExecArray)[0].length;
      return (m as RegExpExecArray)[0];
    };
    const word = () => {
      const start = pos;
      while (pos < raw.length && raw[pos] !== ' ' && raw[pos] !== '\t') pos++;
      return raw.slice(start, pos);
    };

    blanks();
    if (pos === raw.length) return; // empty line
    if (raw[pos] === '#') {
      pos++;
      blanks();
      const keyword = word();
      if (keyword !== 'HELP' && keyword !== 'TYPE') return; // a comment
      if (blanks() === 0) bad(`expected a blank after ${keyword}`);
      const name = token(METRIC_NAME, 'a metric name');
      if (pos < raw.length && raw[pos] !== ' ' && raw[pos] !== '\t') bad('invalid metric name');
      const f = enter(name, n);
      if (f.samples.length > 0) bad(`${keyword} after samples of ${name}`);
      if (keyword === 'HELP') {
        if (f.help !== undefined) bad(`second HELP for ${name}`);
        blanks();
        let help = '';
        for (; pos < raw.length; pos++) {
          const c = raw[pos] as string;
          if (c !== '\\') help += c;
          else {
            const e = raw[++pos];
            if (e === '\\') help += '\\';
            else if (e === 'n') help += '\n';
            else bad('invalid escape in HELP');
          }
        }
        f.help = help;
      } else {
        if (f.type !== undefined) bad(`second TYPE for ${name}`);
        if (blanks() === 0) bad('expected a type');
        const type = word();
        if (!KNOWN_TYPES.has(type)) bad(`unknown type ${type}`);
        blanks();
        if (pos !== raw.length) bad('text after the type');
        f.type = type;
      }
      return;
    }

    // A sample: name [{labels}] value [timestamp]
    const name = token(METRIC_NAME, 'a metric name');
    let family = name;
    for (const [suffix, types] of [
      ['_bucket', ['histogram']],
      ['_sum', ['histogram', 'summary']],
      ['_count', ['histogram', 'summary']],
    ] as const) {
      const base = name.slice(0, -suffix.length);
      if (name.endsWith(suffix) && (types as readonly string[]).includes(families.get(base)?.type ?? '')) family = base;
    }
    const f = families.get(family);
    if (f?.type === undefined) bad(`sample of ${family}, which has no TYPE line before it`);
    if (family === name && f?.type === 'histogram') bad('a histogram sample needs a suffix');
    enter(family, n);
    const labels: [string, string][] = [];
    const gap = blanks();
    if (raw[pos] === '{') {
      pos++;
      blanks();
      while (raw[pos] !== '}') {
        const label = token(LABEL_NAME, 'a label name');
        if (label.startsWith('__')) bad(`reserved label name ${label}`);
        if (labels.some(([l]) => l === label)) bad(`label ${label} given twice`);
        blanks();
        if (raw[pos++] !== '=') bad('expected =');
        blanks();
        if (raw[pos++] !== '"') bad('expected "');
        let value = '';
        for (;;) {
          if (pos >= raw.length) bad('unterminated label value');
          const c = raw[pos++] as string;
          if (c === '"') break;
          if (c !== '\\') value += c;
          else {
            const e = raw[pos++];
            if (e === '\\') value += '\\';
            else if (e === '"') value += '"';
            else if (e === 'n') value += '\n';
            else bad('invalid escape in a label value');
          }
        }
        labels.push([label, value]);
        blanks();
        if (raw[pos] === ',') {
          pos++;
          blanks();
        } else if (raw[pos] !== '}') bad('expected , or }');
      }
      pos++;
      if (blanks() === 0) bad('expected a blank before the value');
    } else if (gap === 0) bad('expected a blank before the value');
    const value = word();
    if (!VALUE.test(value)) bad(`invalid value ${value}`);
    const sample: ParsedSample = { name, labels, value };
    if (blanks() > 0 && pos < raw.length) {
      const ts = word();
      if (!TIMESTAMP.test(ts)) bad(`invalid timestamp ${ts}`);
      const t = BigInt(ts);
      if (t > 2n ** 63n - 1n || t < -(2n ** 63n)) bad('timestamp out of int64 range');
      sample.timestamp = ts;
      blanks();
    }
    if (pos !== raw.length) bad('text after the sample');
    const le = labels.find(([l]) => l === 'le');
    const quantile = labels.find(([l]) => l === 'quantile');
    if (f?.type === 'histogram' && name.endsWith('_bucket') && (!le || !VALUE.test(le[1]))) bad('bucket without le');
    if (f?.type === 'summary' && name === family && (!quantile || !VALUE.test(quantile[1]))) bad('no quantile');
    const key = `${name}${JSON.stringify([...labels].sort())}`;
    if (series.has(key)) bad('duplicate series');
    series.add(key);
    f?.samples.push(sample);
  });
  return [...families.values()];
}
