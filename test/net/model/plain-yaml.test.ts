import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { parseNetText } from '../../../src/net/model/netfile.js';
import { plainYamlData } from '../../../src/net/model/plain-yaml.js';

/** What the yaml package makes of a text: the data netfile-located.ts checks. */
const yamlData = (text: string) => parseDocument(text, { prettyErrors: false, uniqueKeys: false }).toJS();

const PLAIN: Record<string, string> = {
  'flow maps': 'places:\n  a: { dir: "d/a", capacity: 3 }\ntransitions:\n  t: { in: a, run: "cat > $F" }\n',
  'block scalars': 'a: |\n  line1\n  line2\nb: >-\n  folded\n  text\nc: |+\n  kept\n\n',
  'quoted strings': `a: "tab\\t nl\\n u\\u00e9 x\\x41"\nb: 'it''s'\nc: "#not a comment"\n`,
  integers: 'a: 017\nb: 0o17\nc: 0x1F\nd: -12\ne: +5\nf: 18446744073709551616\n',
  floats: 'a: 1.5\nb: .inf\nc: -.Inf\nd: .nan\ne: 1e3\nf: 1.\n',
  booleans: 'a: true\nb: True\nc: TRUE\nd: yes\ne: on\nf: n\ng: false\n',
  'null values': 'a: ~\nb: null\nc:\nd: Null\n',
  'sequences, nested': 'a:\n  - 1\n  - [2, 3]\n  - {x: y}\n  -\n    - deep\n',
  'keys that look like other things': '1: a\ntrue: b\n1.5: c\n"null": d\n',
  'an anchor never used': 'a: &x 1\nb: 2\n',
  'a merge key (no merging in YAML 1.2)': 'a: {b: 1}\nc:\n  <<: {d: 2}\n',
  'a dates-like string': 'a: 2001-12-14t21:59:43.10-05:00\n',
  'comments and a byte order mark': '\ufeff# the net\na: 1 # one\n',
  'an explicit document': '---\na: 1\n...\n',
  'a long string': `a: ${'x'.repeat(5000)}\n`,
};

const NOT_PLAIN: Record<string, string> = {
  'a directive (YAML 1.1 reads yes as true)': '%YAML 1.1\n---\na: yes\n',
  'a null key ("null" for one reader, "" for the other)': 'null: c\n',
  'a ~ key': '~: c\n',
  'an empty key': ': c\n',
  'an alias': 'a: &x {b: 1}\nc: *x\n',
  'a tag': 'a: !!str 12\n',
  'an unknown tag': 'a: !foo bar\n',
  'a key given twice': 'a: 1\na: 2\n',
  'a complex key': '? [a, b]\n: c\n',
  'two documents': 'a: 1\n---\nb: 2\n',
  'no document': '# only a comment\n',
  'nothing at all': '',
  'a tab as indentation': 'a:\n\tb: 1\n',
  'a syntax error': 'places:\n  a: {\n',
};

describe('plainYamlData', () => {
  for (const [what, text] of Object.entries(PLAIN)) {
    it(`reads ${what} as the yaml package does`, () => {
      const data = plainYamlData(text);
      expect(data).toBeDefined();
      expect(data).toStrictEqual(yamlData(text));
    });
  }

  for (const [what, text] of Object.entries(NOT_PLAIN)) {
    it(`leaves a file with ${what} to the yaml package`, () => {
      expect(plainYamlData(text)).toBeUndefined();
    });
  }
});

describe('parseNetText, with plain YAML or not', () => {
  const net = (extra: string) =>
    `${extra}places:\n  a: { dir: d/a }\n  b: { dir: d/b }\ntransitions:\n  t: { in: a, out: b, run: "cat" }\n`;

  it('makes the same model whichever reader read the file', () => {
    const plain = parseNetText(net(''), '/n/net.yaml');
    const other = parseNetText(net('%YAML 1.2\n---\n'), '/n/net.yaml');
    expect([...other.places.keys()]).toEqual([...plain.places.keys()]);
    expect(other.transitions.get('t')).toStrictEqual(plain.transitions.get('t'));
  });

  it('says where a problem of a plain file is, as for any other', () => {
    expect(() => parseNetText(net('').replace('in: a', 'in: c'), '/n/net.yaml')).toThrow(/net\.yaml:5:\d+: /);
  });
});
