import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeHelp,
  escapeLabelValue,
  formatMetrics,
  formatValue,
  isValidLabelName,
  isValidMetricName,
  type MetricFamily,
  type MetricType,
  PROMETHEUS_CONTENT_TYPE,
  type Sample,
  type SampleSuffix,
} from '../../src/web/prometheus.js';

import { ExpositionError, type ParsedFamily, type ParsedSample, parseExposition, VALUE } from './prometheus-reader.js';

// ---------------------------------------------------------------------------------------------

describe('the strict reader itself', () => {
  const good = '# HELP a x\n# TYPE a gauge\na 1\n';
  it('reads a well-formed exposition', () => {
    expect(parseExposition(good)).toEqual([
      { name: 'a', help: 'x', type: 'gauge', samples: [{ name: 'a', labels: [], value: '1' }] },
    ]);
    expect(parseExposition('# TYPE a counter\n\n# just a comment\n a{ b = "c" , } 1 -5 \n')).toEqual([
      { name: 'a', type: 'counter', samples: [{ name: 'a', labels: [['b', 'c']], value: '1', timestamp: '-5' }] },
    ]);
  });

  it.each([
    ['no trailing newline', '# TYPE a gauge\na 1'],
    ['sample without TYPE', 'a 1\n'],
    ['TYPE after samples', '# TYPE a gauge\na 1\n# HELP a late\n'],
    ['second TYPE', '# TYPE a gauge\n# TYPE a gauge\n'],
    ['unknown type', '# TYPE a thing\n'],
    ['families interleaved', '# TYPE a gauge\n# TYPE b gauge\na 1\n'],
    ['bad metric name', '# TYPE a-b gauge\n'],
    ['bad label name', '# TYPE a gauge\na{1x="v"} 1\n'],
    ['reserved label name', '# TYPE a gauge\na{__name__="v"} 1\n'],
    ['label twice', '# TYPE a gauge\na{x="1",x="2"} 1\n'],
    ['bad escape in label', '# TYPE a gauge\na{x="\\t"} 1\n'],
    ['unterminated label value', '# TYPE a gauge\na{x="1} 1\n'],
    ['bad escape in HELP', '# HELP a \\"\n'],
    ['bad value', '# TYPE a gauge\na one\n'],
    ['no value', '# TYPE a gauge\na\n'],
    ['bad timestamp', '# TYPE a gauge\na 1 1.5\n'],
    ['trailing text', '# TYPE a gauge\na 1 2 3\n'],
    ['duplicate series', '# TYPE a gauge\na{x="1",y="2"} 1\na{y="2",x="1"} 2\n'],
    ['bare histogram sample', '# TYPE h histogram\nh 1\n'],
    ['bucket without le', '# TYPE h histogram\nh_bucket 1\n'],
    ['summary without quantile', '# TYPE s summary\ns 1\n'],
    ['garbage', '<script>alert(1)</script>\n'],
    ['no blank before the value', '# TYPE a gauge\na{x="1"}1\n'],
  ])('refuses %s', (_, text) => {
    expect(() => parseExposition(text)).toThrow(ExpositionError);
  });
});

describe('formatMetrics', () => {
  it('writes families, HELP, TYPE, labels, values and timestamps', () => {
    const text = formatMetrics([
      {
        name: 'fspl_net_firings_total',
        help: 'Firings of a transition.',
        type: 'counter',
        samples: [
          { labels: { net: 'n1', transition: 'fetch' }, value: 42 },
          { labels: { net: 'n1', transition: 'store' }, value: 7n, timestamp: 1700000000000 },
        ],
      },
      { name: 'fspl_net_up', samples: [{ value: 1 }] },
      {
        name: 'fspl_net_service_seconds',
        help: 'Service time\nwith a \\ backslash',
        type: 'summary',
        samples: [
          { labels: { quantile: '0.95' }, value: 0.25 },
          { suffix: '_sum', value: 12.5 },
          { suffix: '_count', value: 50 },
        ],
      },
      {
        name: 'fspl_net_wait_seconds',
        type: 'histogram',
        samples: [
          { suffix: '_bucket', labels: { le: '0.5' }, value: 3 },
          { suffix: '_bucket', labels: { le: '+Inf' }, value: 4 },
          { suffix: '_sum', value: 1.75 },
          { suffix: '_count', value: 4 },
        ],
      },
      {
        name: 'fspl_net_rate',
        type: 'gauge',
        help: 'x',
        samples: [{ value: NaN }, { labels: { a: '' }, value: -Infinity }],
      },
    ]);
    expect(text).toBe(
      [
        '# HELP fspl_net_firings_total Firings of a transition.',
        '# TYPE fspl_net_firings_total counter',
        'fspl_net_firings_total{net="n1",transition="fetch"} 42',
        'fspl_net_firings_total{net="n1",transition="store"} 7 1700000000000',
        '# TYPE fspl_net_up untyped',
        'fspl_net_up 1',
        '# HELP fspl_net_service_seconds Service time\\nwith a \\\\ backslash',
        '# TYPE fspl_net_service_seconds summary',
        'fspl_net_service_seconds{quantile="0.95"} 0.25',
        'fspl_net_service_seconds_sum 12.5',
        'fspl_net_service_seconds_count 50',
        '# TYPE fspl_net_wait_seconds histogram',
        'fspl_net_wait_seconds_bucket{le="0.5"} 3',
        'fspl_net_wait_seconds_bucket{le="+Inf"} 4',
        'fspl_net_wait_seconds_sum 1.75',
        'fspl_net_wait_seconds_count 4',
        '# HELP fspl_net_rate x',
        '# TYPE fspl_net_rate gauge',
        'fspl_net_rate NaN',
        'fspl_net_rate{a=""} -Inf',
        '',
      ].join('\n'),
    );
    const parsed = parseExposition(text);
    expect(parsed.map((f) => f.name)).toEqual([
      'fspl_net_firings_total',
      'fspl_net_up',
      'fspl_net_service_seconds',
      'fspl_net_wait_seconds',
      'fspl_net_rate',
    ]);
    expect(parsed[2]?.help).toBe('Service time\nwith a \\ backslash');
    expect(formatMetrics([])).toBe('');
    expect(PROMETHEUS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('escapes hostile label values and help texts so that they read back unchanged', () => {
    const hostile = [
      '<script>alert("x")</script>',
      'a "quoted" value',
      'back\\slash and \\n not a newline',
      'line\nbreak',
      '\\',
      '"',
      '} 1\nevil_metric 2',
      'tab\there, CR\rthere, 😀 and é',
      '',
    ];
    const text = formatMetrics([
      {
        name: 'hostile',
        help: '<script>"help"</script>\n\\n',
        type: 'gauge',
        samples: hostile.map((v, i) => ({ labels: { value: v, i: String(i) }, value: i })),
      },
    ]);
    expect(text).toContain('hostile{value="<script>alert(\\"x\\")</script>",i="0"} 0\n');
    expect(text).toContain('hostile{value="line\\nbreak",i="3"} 3\n');
    expect(text).toContain('hostile{value="\\\\",i="4"} 4\n');
    expect(text.split('\n').filter((l) => l.startsWith('evil'))).toEqual([]);
    const [family] = parseExposition(text);
    expect(family?.help).toBe('<script>"help"</script>\n\\n');
    expect(family?.samples.map((s) => s.labels[0]?.[1])).toEqual(hostile);
  });

  it('refuses hostile or invalid names and inconsistent families', () => {
    const bad: [string, MetricFamily[]][] = [
      ['<script>', [{ name: '<script>', samples: [] }]],
      ['empty name', [{ name: '', samples: [] }]],
      ['name with a space', [{ name: 'a b', samples: [] }]],
      ['name starting with a digit', [{ name: '1a', samples: [] }]],
      ['label <script>', [{ name: 'a', samples: [{ labels: { '<script>': 'x' }, value: 1 }] }]],
      ['label with a colon', [{ name: 'a', samples: [{ labels: { 'a:b': 'x' }, value: 1 }] }]],
      ['reserved label', [{ name: 'a', samples: [{ labels: { __name__: 'x' }, value: 1 }] }]],
      ['unknown type', [{ name: 'a', type: 'thing' as MetricType, samples: [] }]],
      [
        'family twice',
        [
          { name: 'a', samples: [] },
          { name: 'a', samples: [] },
        ],
      ],
      [
        'name made twice',
        [
          { name: 'h', type: 'histogram', samples: [] },
          { name: 'h_count', samples: [] },
        ],
      ],
      [
        'name made twice, other order',
        [
          { name: 'h_sum', samples: [] },
          { name: 'h', type: 'summary', samples: [] },
        ],
      ],
      [
        'histogram family named like a suffix of another',
        [
          { name: 'h', type: 'histogram', samples: [] },
          { name: 'h', type: 'gauge', samples: [] },
        ],
      ],
      [
        'duplicate series',
        [
          {
            name: 'a',
            samples: [
              { labels: { x: '1', y: '2' }, value: 1 },
              { labels: { y: '2', x: '1' }, value: 2 },
            ],
          },
        ],
      ],
      ['suffix on a gauge', [{ name: 'a', type: 'gauge', samples: [{ suffix: '_sum', value: 1 }] }]],
      ['bare histogram sample', [{ name: 'h', type: 'histogram', samples: [{ value: 1 }] }]],
      ['bucket without le', [{ name: 'h', type: 'histogram', samples: [{ suffix: '_bucket', value: 1 }] }]],
      [
        'le not a number',
        [{ name: 'h', type: 'histogram', samples: [{ suffix: '_bucket', labels: { le: 'x' }, value: 1 }] }],
      ],
      ['le on _sum', [{ name: 'h', type: 'histogram', samples: [{ suffix: '_sum', labels: { le: '1' }, value: 1 }] }]],
      ['quantile missing', [{ name: 's', type: 'summary', samples: [{ value: 1 }] }]],
      [
        'quantile on _count',
        [{ name: 's', type: 'summary', samples: [{ suffix: '_count', labels: { quantile: '1' }, value: 1 }] }],
      ],
      ['fractional timestamp', [{ name: 'a', samples: [{ value: 1, timestamp: 1.5 }] }]],
      ['NaN timestamp', [{ name: 'a', samples: [{ value: 1, timestamp: NaN }] }]],
      ['lone surrogate in a label value', [{ name: 'a', samples: [{ labels: { x: '\ud800' }, value: 1 }] }]],
      ['lone surrogate in help', [{ name: 'a', help: 'x\udc00', samples: [] }]],
      ['value not a number', [{ name: 'a', samples: [{ value: '1' as unknown as number }] }]],
      ['label value not a string', [{ name: 'a', samples: [{ labels: { x: 1 as unknown as string }, value: 1 }] }]],
    ];
    for (const [what, families] of bad) {
      expect(() => formatMetrics(families), what).toThrow(RangeError);
    }
  });

  it('formats numbers as the format reads them', () => {
    expect(formatValue(NaN)).toBe('NaN');
    expect(formatValue(Infinity)).toBe('+Inf');
    expect(formatValue(-Infinity)).toBe('-Inf');
    expect(formatValue(0)).toBe('0');
    expect(formatValue(-0)).toBe('0');
    expect(formatValue(42)).toBe('42');
    expect(formatValue(-7)).toBe('-7');
    expect(formatValue(0.1)).toBe('0.1');
    expect(formatValue(1.5e-7)).toBe('1.5e-7');
    expect(formatValue(1e21)).toBe('1e+21');
    expect(formatValue(2 ** 53)).toBe('9007199254740992');
    expect(formatValue(5e-324)).toBe('5e-324');
    expect(formatValue(Number.MAX_VALUE)).toBe('1.7976931348623157e+308');
    expect(formatValue(2n ** 64n)).toBe('18446744073709551616');
    expect(formatValue(-3n)).toBe('-3');
    fc.assert(
      fc.property(fc.double(), (x) => {
        const s = formatValue(x);
        expect(s).toMatch(VALUE);
        const back = s === 'NaN' ? NaN : s === '+Inf' ? Infinity : s === '-Inf' ? -Infinity : Number(s);
        expect(back).toBe(x === 0 ? 0 : x); // -0 is written as 0
      }),
    );
  });

  it('validates names', () => {
    for (const ok of ['a', '_', ':', 'a:b_c9', 'fspl_net_firings_total', 'A'])
      expect(isValidMetricName(ok), ok).toBe(true);
    for (const no of ['', '9a', 'a-b', 'a b', '<script>', 'é', 'a\n', 'a.b'])
      expect(isValidMetricName(no), no).toBe(false);
    for (const ok of ['a', '_a', 'a9', 'le', 'A_b']) expect(isValidLabelName(ok), ok).toBe(true);
    for (const no of ['', '9', 'a:b', '__name__', '__', 'a-b', '"']) expect(isValidLabelName(no), no).toBe(false);
  });

  it('escapes', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeHelp('a\\b"c\nd')).toBe('a\\\\b"c\\nd');
  });
});

// Random families, hostile text included, read back by the strict reader.
const metricName = fc.stringMatching(/^[a-zA-Z_:][a-zA-Z0-9_:]{0,12}$/);
const labelName = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,8}$/).filter((s) => !s.startsWith('__'));
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('<script>', '"', '\\', '\n', '\\n', '\\"', '"} 1\nx 2', '# TYPE x gauge'),
);
const value = fc.oneof(fc.double(), fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), fc.integer());

const arbFamilies = fc
  .uniqueArray(
    fc.record({
      name: metricName,
      help: fc.option(text, { nil: undefined }),
      type: fc.constantFrom<MetricType | undefined>('counter', 'gauge', 'untyped', 'summary', 'histogram', undefined),
      samples: fc.uniqueArray(
        fc.record({
          labels: fc.uniqueArray(fc.tuple(labelName, text), { selector: ([k]) => k, maxLength: 3 }),
          value,
          timestamp: fc.option(fc.integer({ min: -(2 ** 40), max: 2 ** 42 }), { nil: undefined }),
          suffixPick: fc.nat(2),
        }),
        { maxLength: 4, selector: (s) => JSON.stringify([...s.labels.map(([k]) => k)].sort()) },
      ),
    }),
    { selector: (f) => f.name, maxLength: 5 },
  )
  .map((raw): MetricFamily[] =>
    raw.map((f) => {
      const samples: Sample[] = f.samples.map((s, i) => {
        const labels = s.labels.filter(([k]) => k !== 'le' && k !== 'quantile');
        let suffix: SampleSuffix = '';
        if (f.type === 'histogram') {
          suffix = (['_bucket', '_sum', '_count'] as const)[s.suffixPick] as SampleSuffix;
          if (suffix === '_bucket') labels.push(['le', formatValue(i)]);
        } else if (f.type === 'summary') {
          suffix = (['', '_sum', '_count'] as const)[s.suffixPick] as SampleSuffix;
          if (suffix === '') labels.push(['quantile', formatValue(i / 10)]);
        }
        // distinct series: an index label on all but the first
        if (i > 0) labels.push(['series_index', String(i)]);
        return { suffix, labels: Object.fromEntries(labels), value: s.value, timestamp: s.timestamp };
      });
      return { name: f.name, help: f.help, type: f.type, samples };
    }),
  )
  .filter((families) => {
    // names must not collide through suffixes
    const made = families.flatMap((f) =>
      f.type === 'histogram'
        ? [f.name, `${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`]
        : f.type === 'summary'
          ? [f.name, `${f.name}_sum`, `${f.name}_count`]
          : [f.name],
    );
    return new Set(made).size === made.length;
  });

describe('formatMetrics output read back by the strict reader', () => {
  it('is valid and says what it was given', () => {
    fc.assert(
      fc.property(arbFamilies, (families) => {
        const out = formatMetrics(families);
        const parsed = parseExposition(out);
        expect(parsed.length).toBe(families.length);
        families.forEach((f, i) => {
          const p = parsed[i] as ParsedFamily;
          expect(p.name).toBe(f.name);
          expect(p.type).toBe(f.type ?? 'untyped');
          const help = f.help === undefined || f.help === '' ? undefined : f.help.replace(/^[ \t]+/, '');
          expect(p.help).toBe(help);
          expect(p.samples.length).toBe(f.samples.length);
          f.samples.forEach((s, j) => {
            const q = p.samples[j] as ParsedSample;
            expect(q.name).toBe(f.name + (s.suffix ?? ''));
            expect(q.labels).toEqual(Object.entries(s.labels ?? {}));
            expect(q.value).toBe(formatValue(s.value));
            expect(q.timestamp).toBe(s.timestamp === undefined ? undefined : String(s.timestamp));
          });
        });
      }),
      { numRuns: 300 },
    );
  });
});
