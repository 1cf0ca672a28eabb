/**
 * The run's decisions: its Scheduler (plan/scheduler.ts), reading the run's places and
 * transitions as it needs them and told of every change to them, so that a decision costs what
 * changed since the last one, not the size of the net.
 */
import type { NetModel, TransitionSpec } from '../model/model.js';
import type { PauseRecord } from '../operate/pause.js';
import type { MergeView } from '../plan/key-join.js';
import {
  type DecisionVisits,
  type MarkingSource,
  type Pool,
  Scheduler,
  type SchedulerResult,
  schedule,
  type TokenRef,
} from '../plan/scheduler.js';
import type { FiringTally, TallyListener } from './firing-tally.js';
import type { RunPlaces } from './places.js';
import { type TransitionRun, transitionStateOf } from './state.js';

/** What the run's marking is read from. */
export interface RunView {
  readonly net: NetModel;
  readonly trans: ReadonlyMap<string, TransitionRun>;
  readonly places: RunPlaces;
  tally(): FiringTally;
  stopping(): boolean;
  paused(): ReadonlyMap<string, PauseRecord> | undefined;
  mergeView(t: TransitionSpec): MergeView<TokenRef> | undefined;
}

export class RunDecisions {
  private readonly scheduler: Scheduler;
  private readonly source: MarkingSource;
  /** The tally's changes, as the scheduler needs them. */
  readonly listener: TallyListener;

  constructor(
    private readonly view: RunView,
    /** For tests: check each decision against one taken from scratch; hear what each looked at. */
    private readonly test: { check?: boolean; probe?: (visits: DecisionVisits) => void } = {},
  ) {
    const { net } = view;
    this.source = {
      place: (name) => view.places.placeState(name, (p, next) => view.tally().held(p, next)),
      transition: (name) => {
        const r = view.trans.get(name)!;
        return transitionStateOf(r, view.tally().counts(name), view.stopping(), !!view.paused()?.has(name), (t) =>
          view.mergeView(t),
        );
      },
    };
    this.scheduler = new Scheduler(
      [...view.trans.values()].map((r) => r.spec),
      net.places.values(),
      this.source,
    );
    this.listener = {
      held: (place) => this.scheduler.placeChanged(place),
      // What is on its way into a place matters only against a capacity.
      incoming: (place) => {
        if (net.places.get(place)?.capacity !== undefined) this.scheduler.placeChanged(place);
      },
      transition: (name) => this.scheduler.transitionChanged(name),
    };
  }

  /** A place's tokens, scans or claims changed. */
  placeChanged(name: string): void {
    this.scheduler.placeChanged(name);
  }

  /** Every transition may have changed (pauses, the run's stop). */
  everythingChanged(): void {
    this.scheduler.everythingChanged();
  }

  decide(pool: Pool): SchedulerResult {
    const expected = this.test.check ? this.fromScratch(pool) : undefined;
    const res = this.scheduler.decide(pool);
    this.test.probe?.(this.scheduler.visits);
    if (expected) {
      const a = describe(expected);
      const b = describe(res);
      if (a !== b)
        throw new Error(
          `A decision differs from the one taken over the whole marking:\n  incremental  ${b}\n  from scratch ${a}`,
        );
    }
    return res;
  }

  /** The same decision over the whole marking, read afresh. */
  private fromScratch(pool: Pool): SchedulerResult {
    const places = new Map([...this.view.net.places.keys()].map((name) => [name, this.source.place(name)]));
    const transitions = new Map([...this.view.trans.keys()].map((name) => [name, this.source.transition(name)]));
    return schedule({ places, transitions, ...pool, rotation: this.scheduler.rotation });
  }
}

/** A decision's starts and rotation, comparable as text. */
function describe(r: SchedulerResult): string {
  return JSON.stringify({
    starts: r.starts.map((s) => [s.transition, s.skip, s.tokens.map((t) => `${t.place}/${t.token.filename}`)]),
    rotation: r.rotation,
  });
}
