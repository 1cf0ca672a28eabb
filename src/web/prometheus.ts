/**
 * The Prometheus text exposition format, version 0.0.4: metric families as `# HELP` and `# TYPE`
 * lines followed by their samples, one per line, each line ending in "\n". Written by hand rather
 * than with prom-client, which keeps a global registry of live metric objects; here the net's
 * monitoring computes values itself and only needs them rendered, exactly and validated.
 */

/** The HTTP Content-Type of this format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** The metric types of the format. */
export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

const TYPES: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** Sample name suffixes: '' for the family's own name. */
export type SampleSuffix = '' | '_bucket' | '_sum' | '_count';

/** One sample (one line). */
export interface Sample {
  /**
   * Appended to the family name: '_bucket' (with an `le` label), '_sum' and '_count' for a
   * histogram; '' (with a `quantile` label), '_sum' and '_count' for a summary; '' otherwise.
   */
  readonly suffix?: SampleSuffix;
  /** Label names and values, written in this order. Values may hold any text. */
  readonly labels?: Readonly<Record<string, string>>;
  /** The value; a bigint is written in full (Prometheus reads it as a double). */
  readonly value: number | bigint;
  /** Milliseconds since the epoch, an integer; omitted when undefined. */
  readonly timestamp?: number;
}

/** A metric family: its name, help text, type and samples. */
export interface MetricFamily {
  readonly name: string;
  /**
   * Help text (any text; backslashes and newlines escaped). No HELP line when undefined or empty.
   * Readers skip the blanks between the name and the text, so leading spaces and tabs are lost.
   */
  readonly help?: string;
  /** Written on the family's TYPE line; 'untyped' when undefined. */
  readonly type?: MetricType;
  readonly samples: readonly Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** A float as Go's strconv.ParseFloat reads the values here (decimal, Inf, NaN). */
const FLOAT = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;

/** Whether `name` is a valid metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
export function isValidMetricName(name: string): boolean {
  return METRIC_NAME.test(name);
}

/**
 * Whether `name` is a valid label name: [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__",
 * which Prometheus reserves for its own use.
 */
export function isValidLabelName(name: string): boolean {
  return LABEL_NAME.test(name) && !name.startsWith('__');
}

/** A label value escaped for the format: backslash, double quote and newline. */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** A HELP text escaped for the format: backslash and newline. */
export function escapeHelp(help: string): string {
  return help.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

/**
 * A sample value as the format writes it: NaN, +Inf, -Inf, or the shortest decimal that reads
 * back as the same double (JavaScript's, e.g. 42, 0.1, 1e+21, 5e-324); a bigint in full.
 */
export function formatValue(value: number | bigint): string {
  if (typeof value === 'bigint') return value.toString();
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function fail(message: string): never {
  throw new RangeError(`Prometheus exposition: ${message}`);
}

/** In a `u` regular expression a surrogate pair is one code point, so this finds lone ones. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function checkText(text: string, what: string): void {
  if (LONE_SURROGATE.test(text)) fail(`${what} is not valid Unicode (lone surrogate)`);
}

/** The suffixes a family of each type may use. */
function suffixesOf(type: MetricType): readonly SampleSuffix[] {
  if (type === 'histogram') return ['_bucket', '_sum', '_count'];
  if (type === 'summary') return ['', '_sum', '_count'];
  return [''];
}

/**
 * Renders metric families in the text format 0.0.4: for each family, in the order given, its
 * HELP line (when it has help), its TYPE line (always, so that every sample belongs to a declared
 * family), then its samples in the order given. The result ends in "\n" (or is empty when there is
 * nothing to write). Throws RangeError on anything Prometheus would reject: an invalid or
 * repeated metric name (including a sample name such as foo_count that another family also
 * produces), an invalid or reserved label name, a suffix the type does not have, a histogram
 * bucket without a numeric `le` label (or a summary quantile without `quantile`), `le` or
 * `quantile` elsewhere in such families, two samples with the same name and labels, a timestamp
 * that is not a safe integer, or text that is not valid Unicode.
 */
export function formatMetrics(families: readonly MetricFamily[]): string {
  const owner = new Map<string, string>(); // sample name -> family producing it
  const lines: string[] = [];
  for (const family of families) {
    const { name } = family;
    const type = family.type ?? 'untyped';
    if (!isValidMetricName(name)) fail(`invalid metric name ${JSON.stringify(name)}`);
    if (!TYPES.has(type)) fail(`invalid type ${JSON.stringify(type)} for ${name}`);
    const suffixes = suffixesOf(type);
    for (const suffix of suffixes) {
      const produced = name + suffix;
      const other = owner.get(produced);
      if (other !== undefined) fail(`metric name ${produced} is used by both ${other} and ${name}`);
      owner.set(produced, name);
    }
    if (!suffixes.includes('')) {
      if (owner.has(name)) fail(`metric name ${name} is used twice`);
      owner.set(name, name);
    }

    if (family.help !== undefined && family.help !== '') {
      checkText(family.help, `help of ${name}`);
      lines.push(`# HELP ${name} ${escapeHelp(family.help)}`);
    }
    lines.push(`# TYPE ${name} ${type}`);

    const seen = new Set<string>();
    for (const sample of family.samples) {
      const suffix = sample.suffix ?? '';
      if (!suffixes.includes(suffix)) fail(`a ${type} has no samples named ${name}${suffix}`);
      const sampleName = name + suffix;
      const labels = Object.entries(sample.labels ?? {});
      const special = type === 'histogram' ? 'le' : type === 'summary' ? 'quantile' : undefined;
      const needsSpecial = (type === 'histogram' && suffix === '_bucket') || (type === 'summary' && suffix === '');
      let hasSpecial = false;
      const parts: string[] = [];
      for (const [label, value] of labels) {
        if (!isValidLabelName(label)) fail(`invalid label name ${JSON.stringify(label)} in ${sampleName}`);
        if (typeof value !== 'string') fail(`label ${label} of ${sampleName} is not a string`);
        checkText(value, `label ${label} of ${sampleName}`);
        if (label === special) {
          if (!needsSpecial) fail(`label ${label} is reserved in ${sampleName}`);
          if (!FLOAT.test(value)) fail(`label ${label} of ${sampleName} is not a number: ${JSON.stringify(value)}`);
          hasSpecial = true;
        }
        parts.push(`${label}="${escapeLabelValue(value)}"`);
      }
      if (needsSpecial && !hasSpecial) fail(`${sampleName} needs a ${special} label`);
      const labelText = parts.length > 0 ? `{${parts.join(',')}}` : '';
      const series = sampleName + labelText;
      // Label order does not make a different series.
      const sorted = labels.map(([k, v]) => [k, v]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
      const key = `${sampleName}\u0000${JSON.stringify(sorted)}`;
      if (seen.has(key)) fail(`duplicate sample ${series}`);
      seen.add(key);
      if (typeof sample.value !== 'number' && typeof sample.value !== 'bigint') {
        fail(`value of ${series} is not a number`);
      }
      let line = `${series} ${formatValue(sample.value)}`;
      if (sample.timestamp !== undefined) {
        if (!Number.isSafeInteger(sample.timestamp)) {
          fail(`timestamp of ${series} must be an integer number of milliseconds, got ${String(sample.timestamp)}`);
        }
        line += ` ${sample.timestamp}`;
      }
      lines.push(line);
    }
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
