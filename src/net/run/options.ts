/** What a run is given (NetRunOptions), what it tells as it goes (NetEvent) and what it returns. */
import type { Logger } from '../../base/log.js';
import type { TransitionSpec } from '../model/model.js';
import type { Leftover, RemoteLeftover } from './leftovers.js';
import type { LiveState } from './live.js';

export interface NetRunOptions {
  /** Exit once nothing runs and nothing can fire. */
  drain?: boolean;
  signal?: AbortSignal;
  /** Poll every this many seconds instead of using file system events. */
  pollInterval?: number;
  /** The shared pool of workers (default: the number of CPUs). */
  workers?: number;
  /** Seconds that running firings get to finish once the run is asked to stop (default 5). */
  grace?: number;
  /** Run only these transitions (default: all). */
  only?: (t: TransitionSpec) => boolean;
  onEvent?: (e: NetEvent) => void;
  /** Called with each live state the run writes (about twice a second while anything happens; less often in a big busy net, state.ts LIVE_SHARE). */
  onLive?: (state: LiveState) => void;
  logger?: Logger;
  /**
   * For a net across hosts (drain.ts): told when the run is about to judge itself idle (before its
   * last look at the places), when it is idle, and when it starts firing again, so that other
   * hosts can tell whether tokens may still come from here.
   */
  activity?: RunActivity;
  /**
   * With drain: asked once the run is idle and nothing can fire, before it exits; false keeps
   * it going (it looks again at the places on every file event, and every second), as while
   * another host may still send it tokens (drain.ts).
   */
  drainGate?: () => Promise<boolean>;
  /** Tokens of a read place indexed at once, at least (default INDEX_WINDOW): memory against scans. */
  indexWindow?: number;
  /**
   * For the kill -9 tests only (test/net/commit/group-crash.test.ts): called each time a group of
   * commits is recorded in the journal, before any of it is carried out, with its size.
   * @internal
   */
  commitProbe?: (size: number) => void;
  /**
   * For tests: take each decision again from scratch over the whole marking and fail the run if
   * it differs (the scheduler is told what changed between decisions: a change it missed shows).
   * @internal
   */
  checkDecisions?: boolean;
  /**
   * For tests: told, after each decision, how many transitions it weighed and places it read (a
   * decision's work must not grow with the places left alone).
   * @internal
   */
  decisionProbe?: (visits: { transitions: number; places: number }) => void;
}

export interface RunActivity {
  beforeIdleCheck(): void;
  idle(): void;
  busy(): void;
}

export type NetEvent =
  | {
      type: 'start';
      firing: string;
      transition: string;
      key: string;
      tokens: Array<{ place: string; seq: bigint }>;
      attempt: number;
    }
  | {
      type: 'commit';
      firing: string;
      transition: string;
      key: string;
      inputs: Array<{ place: string; seq: bigint }>;
      outputs: Array<{ place: string; seq: bigint }>;
      ms: number;
    }
  | {
      type: 'fail';
      firing: string;
      transition: string;
      key: string;
      reason: string;
      attempt: number;
      willRetry: boolean;
    }
  | { type: 'error-token'; firing: string; transition: string; key: string; place: string; log: string }
  | { type: 'stopped'; transition: string; reason: string; log: string }
  | { type: 'recovered'; commits: number; nops: number; removed: number }
  /** A full disk or an I/O error met in a place (or `(state)`): what needs it waits and tries again (io-faults.ts). */
  | { type: 'io-error'; place: string; code: string; message: string }
  | { type: 'idle' };

export interface NetRunSummary {
  fired: number;
  failed: number;
  /** Tokens left that can never fire (with --drain), with why. */
  leftovers: Leftover[];
  /**
   * A drain on a net across hosts: tokens on other hosts, for this one, that can't come in this
   * drain (drain.ts). Absent when there are none.
   */
  elsewhere?: RemoteLeftover[];
}
