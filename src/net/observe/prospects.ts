/**
 * What can still happen in a net, from what its places hold and what its open firings will
 * commit: which transitions may still fire, and so which places may still receive a token. It
 * tells a token that is *stuck* (nothing in the net can ever bring what it waits for: `net run
 * --drain` would end and list it) from one that is *waiting* (a partner, a number, room, a full
 * batch or a resume can still come).
 *
 * A transition may still fire when it is not stopped and either has an open firing (running, or
 * finished and waiting to commit) or each of its inputs holds enough tokens (a batch without
 * `max-wait` needs its full count) or may still receive some. A place may still receive a token
 * when a transition that writes it (an output or its error place) may still fire, or when another
 * host feeds it. That is the least fixed point of the two rules, found by propagating forward from
 * what is there now, as unit propagation does for Horn clauses: each transition keeps the count of
 * its inputs not yet satisfied, and each place, once it may receive, lowers the counts of its
 * readers once. So it costs one pass over the places and the arcs: linear in the net's size,
 * whatever the tokens.
 *
 * It errs on the side of "may": keys are not followed (a token upstream may carry another key),
 * nor inhibitors, capacities or the order of a sequence place, and a paused transition counts as
 * one that may fire (its pause waits for an operator's resume, and is not "stuck"). So a token
 * called stuck is stuck; one called waiting may, in rare shapes, turn out stuck once what is
 * upstream has moved, and is then called so.
 */
import type { InputArc, NetModel, TransitionSpec } from '../model/model.js';
import type { Leftover } from '../run/leftovers.js';

/** What the prospects are computed from. */
export interface NetNow {
  /** Tokens in a place that may still move (NOPs and tokens below a sequence place's next number left out). */
  holds(place: string): number;
  /** Transitions with an open firing: running, or finished and waiting to commit or to be retried. */
  open: ReadonlySet<string>;
  /** Transitions stopped after a failure by the running `net run`: they fire no more in this run. */
  stopped: ReadonlySet<string>;
  /** Places another host writes (net status --host): tokens may still come from there. */
  fedFromElsewhere?: ReadonlySet<string>;
}

export interface Prospects {
  /** Transitions that may still fire. */
  mayFire: ReadonlySet<string>;
  /** Places that may still receive a token. */
  mayReceive: ReadonlySet<string>;
}

/** Tokens an input needs to fire: a whole batch when it has no max-wait, else one. */
function need(a: InputArc): number {
  return a.take > 1 && a.maxWait === undefined ? a.take : 1;
}

function writes(t: TransitionSpec): string[] {
  return t.error === undefined ? t.outputs : [...t.outputs, t.error];
}

export function prospects(net: NetModel, now: NetNow): Prospects {
  const mayFire = new Set<string>();
  const mayReceive = new Set<string>();
  /** Per transition, its inputs that neither hold enough tokens nor may receive some yet. */
  const unmet = new Map<string, number>();
  /** Per place, the readers for which it is such an input. */
  const waitingOn = new Map<string, TransitionSpec[]>();
  const received: string[] = [];
  const receive = (place: string) => {
    if (mayReceive.has(place) || !net.places.has(place)) return;
    mayReceive.add(place);
    received.push(place);
  };
  const fire = (t: TransitionSpec) => {
    if (mayFire.has(t.name) || now.stopped.has(t.name)) return;
    mayFire.add(t.name);
    for (const p of writes(t)) receive(p);
  };
  for (const p of now.fedFromElsewhere ?? []) receive(p);
  for (const t of net.transitions.values()) {
    let n = 0;
    for (const a of t.inputs) {
      if (now.holds(a.place) >= need(a)) continue;
      n++;
      const list = waitingOn.get(a.place);
      if (list) list.push(t);
      else waitingOn.set(a.place, [t]);
    }
    unmet.set(t.name, n);
    if (n === 0 || now.open.has(t.name)) fire(t);
  }
  for (let i = 0; i < received.length; i++) {
    for (const t of waitingOn.get(received[i]!) ?? []) {
      const n = unmet.get(t.name)! - 1;
      unmet.set(t.name, n);
      if (n === 0) fire(t);
    }
  }
  return { mayFire, mayReceive };
}

/**
 * Whether what a token that can't fire now waits for may still come, so that it is waiting, not
 * stuck. `readersOf` gives a place's readers, `writersOf` its writers. A token held by a stopped
 * transition, or below its place's next number, is stuck; one held by a paused transition waits
 * for its resume.
 */
export function mayStillCome(
  l: Leftover,
  p: Prospects,
  now: NetNow,
  readersOf: (place: string) => TransitionSpec[],
  writersOf: (place: string) => TransitionSpec[],
): boolean {
  const on = l.on ?? [];
  switch (l.code) {
    case 'paused':
      return true;
    case 'no-partner':
    case 'short-batch':
      // Tokens into the places that lack its partner (or its batch's rest).
      return on.length > 0 && on.every((place) => p.mayReceive.has(place));
    case 'waits-for-number':
      // Tokens coming in later take new numbers: only a commit under way can fill this one.
      return on.some((place) => writersOf(place).some((t) => now.open.has(t.name)));
    case 'inhibited':
    case 'no-room':
      // The inhibiting place emptied, or the full place given room, by a reader that may still fire.
      return on.some((place) => readersOf(place).some((t) => p.mayFire.has(t.name)));
    default:
      return false;
  }
}
