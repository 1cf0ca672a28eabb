/**
 * DOT to SVG in-process, with Graphviz compiled to WebAssembly (@viz-js/viz): no system Graphviz
 * needed. The module (about 1 MB) is loaded on first use only.
 */
import type { Viz } from '@viz-js/viz';
import { NetError } from '../../base/errors.js';

let viz: Promise<Viz> | undefined;

/** The SVG drawing of a DOT graph; NetError when Graphviz rejects it. */
export async function dotToSvg(dot: string): Promise<string> {
  viz ??= import('@viz-js/viz').then((m) => m.instance());
  const r = (await viz).render(dot, { format: 'svg' });
  if (r.status !== 'success')
    throw new NetError(`Graphviz could not draw the net: ${r.errors.map((e) => e.message).join('; ')}`);
  return r.output;
}
