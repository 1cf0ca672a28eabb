/**
 * A net's definition (a net file's data, or JavaScript) to its model: the places, then each
 * transition's arcs, command and settings, with the cross-references checked (unknown places,
 * merges with batches...). Problems are collected, not thrown, so that a net file reports all of
 * them with their positions, in the order the file reads. build.ts adds the checks of the layers
 * above (hosts).
 */
import path from 'node:path';
import { didYouMean } from '../../base/suggest.js';
import {
  type InputArc,
  type ModelProblem,
  NAME_RE,
  type NetDefinition,
  type NetModel,
  type OutMode,
  type PlaceSpec,
  type RunSpec,
  type TransitionDefinition,
  type TransitionSpec,
} from './model.js';

type Where = Array<string | number>;

/** What the checks of one transition share: the problems found so far and the places known. */
interface Checker {
  problems: ModelProblem[];
  places: ReadonlyMap<string, PlaceSpec>;
  /** Report `place` at `where` unless it is a place of the net. */
  known(where: Where, place: string): void;
}

/**
 * A duration in a definition: absent, or a number of seconds above 0 (the schema's rule, for nets
 * defined in JavaScript: NaN or a negative timeout would fire at once). Any length: timer.ts.
 */
function seconds(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && value > 0);
}

/** Build the model from a shape-checked definition, with every problem found (built anyway, for build.ts's checks). */
export function buildModel(def: NetDefinition, file?: string): { model: NetModel; problems: ModelProblem[] } {
  const problems: ModelProblem[] = [];
  const dir = path.resolve(def.dir);
  const places = placesOf(def, dir, problems);
  const check: Checker = {
    problems,
    places,
    known(where, place) {
      if (places.has(place)) return;
      // Arcs join places to transitions: a transition's name here is a mistake of its own kind.
      const hint =
        def.transitions && Object.hasOwn(def.transitions, place)
          ? ` (${JSON.stringify(place)} is a transition: arcs name places)`
          : didYouMean(place, places.keys());
      problems.push({ path: where, message: `Unknown place ${JSON.stringify(place)}${hint}` });
    },
  };
  const transitions = new Map<string, TransitionSpec>();
  for (const [name, t] of Object.entries(def.transitions ?? {})) {
    transitions.set(name, transitionOf(name, t, dir, check));
  }
  const stateDir = path.resolve(
    dir,
    def.state ?? (file ? `${path.basename(file).replace(/\.[^.]*$/, '')}.state` : 'net.state'),
  );
  return { model: { file, dir, stateDir, places, transitions, hosts: def.hosts }, problems };
}

function placesOf(def: NetDefinition, dir: string, problems: ModelProblem[]): Map<string, PlaceSpec> {
  const places = new Map<string, PlaceSpec>();
  for (const [name, p] of Object.entries(def.places ?? {})) {
    if (!NAME_RE.test(name))
      problems.push({
        path: ['places', name],
        atKey: true,
        message: `Invalid place name ${JSON.stringify(name)}: use letters, digits and _, starting with a letter`,
      });
    const { dir: pdir, order, capacity, sink, host, sync, signers, from } = p ?? {};
    places.set(name, {
      name,
      dir: path.resolve(dir, typeof pdir === 'string' ? pdir : path.join('places', name)),
      order: order ?? 'sequence',
      capacity,
      sink,
      host,
      sync,
      ...(typeof signers === 'string' ? { signers: path.resolve(dir, signers) } : {}),
      ...(from !== undefined ? { from: typeof from === 'string' ? [from] : from } : {}),
    });
  }
  return places;
}

function transitionOf(name: string, t: TransitionDefinition, dir: string, check: Checker): TransitionSpec {
  const at = (...rest: Where): Where => ['transitions', name, ...rest];
  const { problems } = check;
  if (!NAME_RE.test(name))
    problems.push({
      path: at(),
      atKey: true,
      message: `Invalid transition name ${JSON.stringify(name)}: use letters, digits and _, starting with a letter`,
    });
  if (check.places.has(name))
    problems.push({ path: at(), atKey: true, message: `${JSON.stringify(name)} names both a place and a transition` });
  const inputs = inputsOf(t, at, check);
  const { outputs, outMode } = outputsOf(t, at, check);
  if (t.error !== undefined) {
    check.known(at('error'), t.error);
    if (outputs.includes(t.error)) problems.push({ path: at('error'), message: 'The error place is also an output' });
  }
  for (const [i, p] of (t.inhibit ?? []).entries()) check.known(at('inhibit', i), p);
  const run = runOf(t, at, problems);
  if (!run && !t.fn && outputs.length > 0 && outMode !== 'all') {
    problems.push({
      path: at('out'),
      absent: at('run'),
      message: `Without run, a transition copies its tokens to every output: ${outMode} needs a command to choose`,
    });
  }
  const { fn, env, cwd, error, retries, timeout, workers, order, inhibit, host, user, group } = t;
  if (!seconds(timeout))
    problems.push({
      path: at('timeout'),
      message: `timeout must be a number of seconds above 0 (got ${String(timeout)})`,
    });
  return {
    name,
    inputs,
    outputs,
    outMode,
    run,
    fn,
    env: env ?? {},
    cwd: path.resolve(dir, cwd ?? '.'),
    error,
    retries: retries ?? 0,
    timeout,
    workers: workers ?? 1,
    ordered: order !== 'none',
    inhibit: inhibit ?? [],
    host,
    user,
    group,
  };
}

/** The input arcs: each a known place, at most once; several only one token each (an and-merge). */
function inputsOf(t: TransitionDefinition, at: (...rest: Where) => Where, check: Checker): InputArc[] {
  const { problems } = check;
  const rawIn = Array.isArray(t.in) ? t.in : [t.in];
  const inputs: InputArc[] = rawIn.map((a, i) => {
    const arc =
      typeof a === 'string' ? { place: a, take: 1 } : { place: a.place, take: a.take ?? 1, maxWait: a['max-wait'] };
    const where = Array.isArray(t.in) ? at('in', i) : at('in');
    check.known(where, arc.place);
    if (!seconds(arc.maxWait))
      problems.push({
        path: [...where, 'max-wait'],
        message: `max-wait must be a number of seconds above 0 (got ${String(arc.maxWait)})`,
      });
    return arc;
  });
  if (inputs.length === 0) problems.push({ path: at('in'), message: 'A transition needs at least one input place' });
  const seen = new Set<string>();
  for (const [i, a] of inputs.entries()) {
    if (seen.has(a.place))
      problems.push({ path: at('in', i), message: `Place ${JSON.stringify(a.place)} is an input twice` });
    seen.add(a.place);
  }
  if (inputs.length > 1 && inputs.some((a) => a.take !== 1)) {
    problems.push({
      path: at('in'),
      message: 'An and-merge takes one token of each place: batches (take) need a single input place',
    });
  }
  return inputs;
}

/** The output places and how they are chosen (all of them, one of them, any of them). */
function outputsOf(
  t: TransitionDefinition,
  at: (...rest: Where) => Where,
  check: Checker,
): { outputs: string[]; outMode: OutMode } {
  let outputs: string[] = [];
  let outMode: OutMode = 'all';
  const out = t.out;
  if (typeof out === 'string') outputs = [out];
  else if (Array.isArray(out)) outputs = out;
  else if (out && 'one-of' in out) [outMode, outputs] = ['one-of', out['one-of']];
  else if (out && 'any-of' in out) [outMode, outputs] = ['any-of', out['any-of']];
  const outPath = out && typeof out === 'object' && !Array.isArray(out) ? at('out', outMode) : at('out');
  outputs.forEach((p, i) => check.known(typeof out === 'string' ? outPath : [...outPath, i], p));
  if (new Set(outputs).size !== outputs.length)
    check.problems.push({ path: outPath, message: 'A place is named twice among the outputs' });
  if (outMode !== 'all' && outputs.length < 2)
    check.problems.push({ path: outPath, message: `${outMode} needs at least two places` });
  return { outputs, outMode };
}

/** The command: a shell line, an argv, or none (a transition that moves its tokens as they are). */
function runOf(t: TransitionDefinition, at: (...rest: Where) => Where, problems: ModelProblem[]): RunSpec | undefined {
  let run: RunSpec | undefined;
  if (typeof t.run === 'string') run = { shell: t.run };
  else if (Array.isArray(t.run)) run = { argv: t.run };
  if (run && t.fn) problems.push({ path: at('run'), message: 'Give run or fn, not both' });
  if (!run && !t.fn && t.run !== null && t.run !== undefined)
    problems.push({ path: at('run'), message: 'run must be a string, a list of strings, or null' });
  if (run && 'argv' in run && run.argv.length === 0)
    problems.push({ path: at('run'), message: 'run is an empty list' });
  return run;
}
