/**
 * Petri nets of queues, for library users: `Net.load(file)` or `Net.define({...})`, then
 * `init()`, `put()`, `run()`, `status()`, `check()` and `dot()`. Places are Filespooler queues,
 * transitions are commands (or async functions), tokens are packets.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { v4 as uuidv4 } from 'uuid';
import { LockedError, NetRequestError } from '../base/errors.js';
import { type ReceiveSummary, receivePackets } from '../send/receive.js';
import { mkdirDurable } from '../sys/durable.js';
import { freshWriteStream, writeFresh } from '../sys/untrusted.js';
import { type HostRunOptions, runHost } from './hosts/distributed.js';
import { checkNncpReceiving, type ReceiveCheck } from './hosts/nncp-check.js';
import { type OutboxProbe, probeOutbox } from './hosts/outbox-sender.js';
import { fedPlace, senderRule } from './hosts/receive-admit.js';
import { defineNet } from './model/build.js';
import { checkNet, type NetWarning } from './model/check.js';
import { hostConfig, hostFor, hostView, placesOf, remotePlaces } from './model/hosts.js';
import { effectiveOrder, type NetDefinition, type NetModel } from './model/model.js';
import { placeNamed, unknownName } from './model/names.js';
import { loadNetFile } from './model/netfile.js';
import { type DotState, netToDot } from './observe/dot.js';
import { hostStatus } from './observe/outbox-status.js';
import { type NetStatusReport, netStatus } from './observe/status.js';
import { type PauseRecord, pauseTransition, readPauses, resumeTransition } from './operate/pause.js';
import { type RetryOptions, type RetryResult, retryTokens } from './operate/retry.js';
import { restoreSetAside, type SetAsideResult, setAside } from './operate/set-aside.js';
import { findToken, listTokens, type TokenListing, tokenPayload } from './operate/tokens.js';
import { Place } from './place/place.js';
import { type SigningCheck, signerOf, signingChecks } from './place/signatures.js';
import { KEY_VAR } from './place/token.js';
import { applyPermissions, permissionWarnings } from './run/permissions.js';
import type { NetRunSummary } from './run/runner.js';

export interface PutOptions {
  /** The token's correlation key; default: a new UUID. */
  key?: string;
  params?: Array<string | Uint8Array>;
  /** Further variables (names without FSPL_SET_). */
  env?: Record<string, string>;
  /** Sign the token with this OpenSSH private key (no passphrase): for a place that requires signatures. */
  sign?: string;
}

export interface PutResult {
  place: string;
  seq: bigint;
  key: string;
  filename: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Net {
  readonly model: NetModel;

  constructor(model: NetModel) {
    this.model = model;
  }

  /** Load and validate a net file (NetFileError with file:line:column on problems). */
  static load(file: string): Net {
    return new Net(loadNetFile(file));
  }

  /** A net defined in JavaScript; transitions may have `fn: async (ctx) => ...` instead of `run`. */
  static define(def: NetDefinition): Net {
    return new Net(defineNet(def));
  }

  private place(name: string): Place {
    return new Place(placeNamed(this.model, name), effectiveOrder(this.model, name));
  }

  /**
   * Create every place's queue and the state directory; existing ones are left as they are.
   * With `host`, only that host's places and its outboxes (a net on several hosts, see initHost);
   * with `permissions`, owners and modes by the rule of permissions.ts (as root). Returns the
   * places created.
   */
  init(options: { only?: (place: string) => boolean; host?: string; permissions?: boolean } = {}): string[] {
    if (options.host !== undefined) return this.initHost(options.host, options).places;
    return this.initPlaces(options);
  }

  /**
   * One host of a net on several hosts: its places, and the outboxes of the places on other hosts
   * that it writes (so that status can tell an empty outbox from a missing one, and a sync tool
   * can be pointed at the outbox's jobs/ before the first run). Returns the names of both made.
   */
  initHost(
    host: string,
    options: { only?: (place: string) => boolean; permissions?: boolean } = {},
  ): { places: string[]; outboxes: string[] } {
    const places = this.initPlaces({ ...options, host });
    const view = hostView(this.model, host);
    const outboxes: string[] = [];
    for (const name of remotePlaces(view).keys()) {
      if (options.only && !options.only(name)) continue;
      const p = new Place(view.places.get(name)!, effectiveOrder(view, name));
      if (!p.exists()) outboxes.push(name);
      p.init();
    }
    return { places, outboxes };
  }

  private initPlaces(options: { only?: (place: string) => boolean; host?: string; permissions?: boolean }): string[] {
    const made: string[] = [];
    const view = hostView(this.model, options.host);
    const mine = new Set(options.host === undefined ? view.places.keys() : placesOf(this.model, options.host));
    const names: string[] = [];
    for (const spec of this.model.places.values()) {
      if (!mine.has(spec.name) || (options.only && !options.only(spec.name))) continue;
      const p = new Place(spec, effectiveOrder(this.model, spec.name));
      if (!p.exists()) made.push(spec.name);
      p.init();
      names.push(spec.name);
    }
    mkdirDurable(view.stateDir);
    if (options.permissions) applyPermissions(this.model, names);
    return made;
  }

  /**
   * Put a token into a place, waiting while the place is full (capacity). The payload (a stream,
   * bytes or { path }) is spooled first, so the place's writers are held only for the final copy.
   */
  async put(
    place: string,
    payload: Readable | Uint8Array | { path: string } | undefined,
    options: PutOptions = {},
  ): Promise<PutResult> {
    for (;;) {
      const r = await this.tryPut(place, payload, options);
      if (r !== 'full') return r;
      await sleep(100);
    }
  }

  /** Put a token, or return 'full' at once (writing nothing) when the place is at its capacity. */
  async tryPut(
    place: string,
    payload: Readable | Uint8Array | { path: string } | undefined,
    options: PutOptions = {},
  ): Promise<PutResult | 'full'> {
    const p = this.place(place);
    if (!p.exists()) throw new NetRequestError(`Place ${place} has no queue at ${p.spec.dir}: run fspl net init first`);
    // a key that can't sign is refused before the payload is read
    if (options.sign !== undefined) p.signKey = signerOf(path.resolve(options.sign)).path;
    let spool: string | undefined;
    let source: { path: string } | undefined;
    try {
      if (payload instanceof Uint8Array || payload instanceof Readable) {
        spool = path.join(os.tmpdir(), `fspl-net-put-${uuidv4()}`);
        // Made new (O_EXCL), the caller's alone: /tmp is everyone's to write.
        if (payload instanceof Uint8Array) writeFresh(spool, payload, 0o600);
        else await pipeline(payload, freshWriteStream(spool, 0o600));
        source = { path: spool };
      } else source = payload;
      const key = options.key ?? uuidv4();
      const env: Array<[Uint8Array, Uint8Array]> = Object.entries(options.env ?? {})
        .filter(([k]) => k !== KEY_VAR)
        .map(([k, v]) => [Buffer.from(k), Buffer.from(v)]);
      env.unshift([Buffer.from(KEY_VAR), Buffer.from(key)]);
      const params = (options.params ?? []).map((x) => (typeof x === 'string' ? Buffer.from(x) : x));
      for (;;) {
        try {
          // Checked under the writers' lock, as the runner checks before it commits into a place.
          const r = p.putIfRoom({ env, params, payload: source }, p.spec.capacity);
          if (r === 'full') return 'full';
          return { place, seq: r.seq, key, filename: r.filename };
        } catch (err) {
          if (!(err instanceof LockedError)) throw err;
          await sleep(20); // a committing run holds the place's writers for a moment
        }
      }
    } finally {
      if (spool) fs.rmSync(spool, { force: true });
    }
  }

  /**
   * Run the net's transitions until the signal aborts or, with drain, until nothing can fire.
   * On a net with hosts, `host` says which host this is: its transitions run, and tokens for
   * places on other hosts leave through outboxes (docs/distributed.md).
   */
  run(options: HostRunOptions = {}): Promise<NetRunSummary> {
    return runHost(this.model, options);
  }

  /**
   * Where the tokens are; on a net with hosts, `host` gives that host's view: its places, its run,
   * its outboxes, and which of its places other hosts feed.
   */
  async status(options: { host?: string } = {}): Promise<NetStatusReport> {
    return options.host === undefined ? netStatus(this.model) : hostStatus(this.model, options.host);
  }

  /**
   * Try, from `host`, the way to every place on another host that it sends to over ssh, as its
   * sender would (ssh, the queue there, the lock, the `fspl:` that checks seals, the numbering),
   * sending nothing. Places delivered by a sync tool are not tried.
   */
  async probeHost(host: string, options: { signal?: AbortSignal } = {}): Promise<OutboxProbe[]> {
    const view = hostView(this.model, host);
    const probes = [...remotePlaces(view)]
      .filter(([, r]) => !r.sync)
      .map(([place, remote]) =>
        probeOutbox({
          place,
          outbox: view.places.get(place)!.dir,
          remote,
          host: hostConfig(this.model, remote.host),
          signal: options.signal,
        }),
      );
    return Promise.all(probes);
  }

  /**
   * On `host`, whether the allowed signers of its signed places can be read and its `key` can sign
   * what it sends to other hosts (`net check --host`).
   */
  checkSigning(host: string): SigningCheck[] {
    return signingChecks(hostView(this.model, host));
  }

  /**
   * On a host reached through NNCP, whether its NNCP config runs `fspl net receive` for the places
   * other hosts feed (`net check --host`).
   */
  checkReceiving(host: string): Promise<ReceiveCheck[]> {
    hostView(this.model, host);
    return checkNncpReceiving(this.model, host);
  }

  /**
   * Store the tokens framed on `input` (src/send/frames.ts: what an outbox hands to NNCP) in
   * `place`, each exactly once, whatever order they come in: `fspl net receive`, the exec handle
   * that NNCP runs on a host reached through NNCP. The place must be on `host` and fed by another
   * host; with `sender` (NNCP_SENDER: the sending node's id), it must be that host's NNCP node
   * (or one of `host`'s `nncp.from`). Else a ReceiveRefusedError, before `input` is read.
   */
  async receive(
    place: string,
    input: Readable,
    options: { host?: string; sender?: string; signal?: AbortSignal } = {},
  ): Promise<ReceiveSummary> {
    const host = hostFor(this.model, options.host, { place });
    const view = hostView(this.model, host);
    const own = [...view.places.values()].filter((p) => !p.remote);
    const spec = own.find((p) => p.name === place);
    if (!spec)
      throw unknownName('place', place, host === undefined ? own.map((p) => p.name) : placesOf(this.model, host));
    const fed = fedPlace(this.model, host, spec);
    return receivePackets(spec.dir, input, { ...senderRule(this.model, fed, options.sender), signal: options.signal });
  }

  /**
   * Put error tokens back into the places they were taken from (docs/nets.md, "Operating a net"),
   * each move exactly once, whether `net run` runs or not. Bad requests throw NetRequestError.
   */
  retry(options: RetryOptions & { host?: string }): Promise<RetryResult> {
    const view = hostView(
      this.model,
      hostFor(this.model, options.host, { place: options.errorPlace, transition: options.transition }),
    );
    return options.setAside ? restoreSetAside(view, options) : retryTokens(view, options);
  }

  /**
   * Take a poison token out of its place without losing it: into STATE/set-aside with the reason
   * (a sequence place gets a NOP in its number). `retry({ setAside: true, ... })` brings it back.
   */
  setAside(
    place: string,
    which: { key?: string; seq?: bigint },
    options: { reason?: string; by?: string; host?: string } = {},
  ): Promise<SetAsideResult> {
    return setAside(hostView(this.model, hostFor(this.model, options.host, { place })), place, which, options);
  }

  /**
   * Pause a transition: a run starts no new firing of it, now or after a restart, until resume.
   * Its running firings finish, or with `kill` are abandoned (their tokens stay).
   */
  pause(
    transition: string,
    options: { reason?: string; by?: string; host?: string; kill?: boolean } = {},
  ): PauseRecord {
    return pauseTransition(this.model, transition, {
      ...options,
      host: hostFor(this.model, options.host, { transition }),
    });
  }

  /** Resume a paused transition; the pause it ends, or undefined when it was not paused. */
  resume(transition: string, options: { host?: string } = {}): PauseRecord | undefined {
    return resumeTransition(this.model, transition, {
      ...options,
      host: hostFor(this.model, options.host, { transition }),
    });
  }

  /** The paused transitions (on a net with hosts, of `host`). */
  pauses(options: { host?: string } = {}): PauseRecord[] {
    return [
      ...readPauses(
        options.host === undefined ? this.model.stateDir : hostView(this.model, options.host).stateDir,
      ).values(),
    ];
  }

  /** The tokens of a place in the order a reader takes them, streamed (flat memory on any number). */
  tokens(place: string, options: { host?: string } = {}): AsyncIterable<TokenListing> {
    return listTokens(hostView(this.model, hostFor(this.model, options.host, { place })), place);
  }

  /** One token of a place, by key or number, with its payload as a stream on request. */
  async token(
    place: string,
    which: { key?: string; seq?: bigint },
    options: { host?: string } = {},
  ): Promise<TokenListing & { payload(): Readable }> {
    const t = await findToken(hostView(this.model, hostFor(this.model, options.host, { place })), place, which);
    return { ...t, payload: () => tokenPayload(t) };
  }

  /** Warnings about the net (and, for nets with users, about owners and modes on disk). */
  check(): NetWarning[] {
    return [...checkNet(this.model), ...permissionWarnings(this.model)];
  }

  dot(state?: DotState): string {
    return netToDot(this.model, state);
  }
}

export { describeVerifierProblem, receiveScript, type VerifierProblem } from '../send/receive-script.js';
export { type OutgoingPacket, type SendResult, sendPacket, sendPackets } from '../send/ssh-send.js';
export type { HostRunOptions } from './hosts/distributed.js';
export type { ReceiveCheck } from './hosts/nncp-check.js';
export type { OutboxProbe } from './hosts/outbox-sender.js';
export { defineNet } from './model/build.js';
export type { NetWarning } from './model/check.js';
export type {
  FiringContext,
  FiringInput,
  NetDefinition,
  NetModel,
  TransitionDefinition,
  TransitionFunction,
} from './model/model.js';
export { loadNetFile, parseNetText } from './model/netfile.js';
export { placeTokens, type TokenInfo, transitionDetail } from './observe/detail.js';
export { type DotState, liveDotState } from './observe/dot.js';
export { netMetricFamilies, netMetricsText, netStatusJson } from './observe/metrics.js';
export type { NetState, NetStatusReport, PlaceStatus, TransitionStatus } from './observe/status.js';
export { dotToSvg } from './observe/svg.js';
export { type PauseRecord, pauseText } from './operate/pause.js';
export type { RetryMove, RetryOptions, RetryResult } from './operate/retry.js';
export type { SetAsideResult } from './operate/set-aside.js';
export type { TokenListing } from './operate/tokens.js';
export { allocateWorkers } from './plan/allocate.js';
export { type SchedulerInput, type SchedulerResult, schedule } from './plan/scheduler.js';
export {
  lowerBound,
  parseService,
  type ServiceTime,
  type SimulateOptions,
  type SimulationReport,
  simulate,
} from './plan/simulate.js';
export type { Leftover, LeftoverCode } from './run/leftovers.js';
export { type LastFailure, TransitionMonitor, type TransitionRates } from './run/monitor.js';
export type { NetEvent, NetRunOptions, NetRunSummary } from './run/runner.js';
