/**
 * The drawing of a net in Graphviz DOT, generated from the model as the pmjq paper does: places
 * are ellipses (with their token counts when known), transitions boxes. Error places are red and
 * dashed. An and-branch is plain arcs to every output; an xor-branch (one-of) dashed arcs through
 * a small diamond; any-of dotted arcs. An and-merge is a double-bordered box whose input arcs say
 * "by key"; an xor-merge is simply a place with several writers. Inhibitor arcs end in a circle,
 * batches say ×N. The output is stable: it follows the order of the net file.
 */
import { isMerge, type NetModel } from '../model/model.js';
import type { NetStatusReport } from './status.js';

export interface DotState {
  /** Tokens per place. */
  tokens?: Map<string, number>;
  /** Places that are stuck and transitions that fail or stopped (drawn in red). */
  alarm?: Set<string>;
  /** Transitions running now (drawn filled). */
  running?: Map<string, number>;
  /** Transitions an operator paused (drawn dashed, in amber, and saying so). */
  paused?: Set<string>;
  /** Lines added at the end of a node's label (net serve draws placeholders it fills in live). */
  lines?: (kind: 'place' | 'transition', name: string) => string[];
}

/** A DOT string literal. */
export function dotString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

export function netToDot(net: NetModel, state: DotState = {}): string {
  const errorPlaces = new Set([...net.transitions.values()].map((t) => t.error).filter((e): e is string => !!e));
  const lines = [
    'digraph net {',
    '  rankdir=LR;',
    '  node [fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
  ];
  for (const p of net.places.values()) {
    const n = state.tokens?.get(p.name);
    const label = [
      n === undefined
        ? p.name
        : `${p.name}\n${n}${p.capacity !== undefined ? `/${p.capacity}` : ''} token${n === 1 ? '' : 's'}`,
      ...(state.lines?.('place', p.name) ?? []),
    ].join('\n');
    const attrs = [`shape=ellipse`, `label=${dotString(label)}`, `id=${dotString(`place-${p.name}`)}`];
    const fill = state.alarm?.has(p.name) ? '#ffd6d6' : n ? '#e8f0ff' : undefined;
    if (errorPlaces.has(p.name))
      attrs.push('color=red', 'fontcolor=red', fill ? 'style="dashed,filled"' : 'style=dashed');
    else if (fill) attrs.push('style=filled');
    if (fill) attrs.push(`fillcolor="${fill}"`);
    lines.push(`  ${dotString(`p:${p.name}`)} [${attrs.join(', ')}];`);
  }
  for (const t of net.transitions.values()) {
    const kind = !t.run && !t.fn ? '\n(move)' : '';
    const running = state.running?.get(t.name);
    const paused = state.paused?.has(t.name);
    const label = [
      `${t.name}${kind}${paused ? '\npaused' : ''}${running ? `\n${running} running` : ''}`,
      ...(state.lines?.('transition', t.name) ?? []),
    ].join('\n');
    const attrs = [`shape=box`, `label=${dotString(label)}`, `id=${dotString(`transition-${t.name}`)}`];
    if (isMerge(t)) attrs.push('peripheries=2');
    if (state.alarm?.has(t.name)) attrs.push('style=filled', 'fillcolor="#ffb3b3"', 'color=red');
    else if (paused) attrs.push('style="filled,dashed"', 'fillcolor="#fff1c2"', 'color="#a07000"');
    else if (running) attrs.push('style=filled', 'fillcolor="#d6f5d6"');
    lines.push(`  ${dotString(`t:${t.name}`)} [${attrs.join(', ')}];`);
  }
  for (const t of net.transitions.values()) {
    const tn = dotString(`t:${t.name}`);
    for (const a of t.inputs) {
      const attrs: string[] = [];
      if (isMerge(t)) attrs.push('label="by key"');
      if (a.take > 1)
        attrs.push(`label=${dotString(`×${a.take}${a.maxWait !== undefined ? ` (≤${a.maxWait}s)` : ''}`)}`);
      lines.push(`  ${dotString(`p:${a.place}`)} -> ${tn}${attrs.length ? ` [${attrs.join(', ')}]` : ''};`);
    }
    for (const i of t.inhibit)
      lines.push(`  ${dotString(`p:${i}`)} -> ${tn} [arrowhead=odot, style=dashed, label="inhibit"];`);
    if (t.outMode === 'all') {
      for (const o of t.outputs) lines.push(`  ${tn} -> ${dotString(`p:${o}`)};`);
    } else {
      const j = dotString(`x:${t.name}`);
      const xor = t.outMode === 'one-of';
      lines.push(`  ${j} [shape=diamond, label=${xor ? '"xor"' : '"any"'}, width=0.3, height=0.3, fontsize=8];`);
      lines.push(`  ${tn} -> ${j} [arrowhead=none];`);
      for (const o of t.outputs) lines.push(`  ${j} -> ${dotString(`p:${o}`)} [style=${xor ? 'dashed' : 'dotted'}];`);
    }
    if (t.error)
      lines.push(`  ${tn} -> ${dotString(`p:${t.error}`)} [color=red, fontcolor=red, style=dashed, label="error"];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/**
 * The colouring of `net dot --live`: token counts, running and paused transitions, and in red stuck or missing places
 * and failing transitions.
 */
export function liveDotState(r: NetStatusReport): DotState {
  const alarm = new Set<string>();
  for (const p of r.places) if (p.stuck > 0 || p.problem) alarm.add(p.name);
  for (const t of r.transitions) if (t.failing) alarm.add(t.name);
  return {
    tokens: new Map(r.places.map((p) => [p.name, p.tokens])),
    running: new Map(r.transitions.filter((t) => t.running > 0).map((t) => [t.name, t.running])),
    paused: new Set(r.transitions.filter((t) => t.paused).map((t) => t.name)),
    alarm,
  };
}
