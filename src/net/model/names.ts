/**
 * Names a user gives (on the command line, or to the Net facade) looked up in a net: the place or
 * the transition, or an UnknownNameError (errors.ts) that names the one probably meant, or else
 * the names there are. A bad name is bad input, not a failure of the net: the CLI exits 2.
 */
import { UnknownNameError } from '../../base/errors.js';
import { closest } from '../../base/suggest.js';
import type { NetModel, PlaceSpec, TransitionSpec } from './model.js';

/** Names an error lists at most: a net of thousands of places gets a count, not a screenful. */
const LISTED = 20;

/** `No place named "inbx" in the net; did you mean "inbox"?`, or with no close name the list of names. */
export function unknownName(kind: 'place' | 'transition', given: string, known: Iterable<string>): UnknownNameError {
  const names = [...known];
  const close = closest(given, names);
  const head = `No ${kind} named ${JSON.stringify(given)} in the net`;
  if (close !== undefined) return new UnknownNameError(kind, given, `${head}; did you mean ${JSON.stringify(close)}?`);
  const list =
    names.length <= LISTED
      ? names.join(', ')
      : `${names.slice(0, LISTED).join(', ')} and ${names.length - LISTED} more`;
  return new UnknownNameError(kind, given, `${head} (${kind}s: ${list || 'none'})`);
}

/** The place of that name, or an UnknownNameError. */
export function placeNamed(net: NetModel, name: string): PlaceSpec {
  const spec = net.places.get(name);
  if (!spec) throw unknownName('place', name, net.places.keys());
  return spec;
}

/** The transition of that name, or an UnknownNameError. */
export function transitionNamed(net: NetModel, name: string): TransitionSpec {
  const t = net.transitions.get(name);
  if (!t) throw unknownName('transition', name, net.transitions.keys());
  return t;
}
