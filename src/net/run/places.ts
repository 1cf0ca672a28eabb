/**
 * The places as one run sees them: which it indexes and how much of each (the lookahead and the
 * window), the consumers' locks of the places it reads and their next numbers, the names it wrote
 * itself (their file events are not news), and the token counts of the places it only writes.
 */
import path from 'node:path';
import { LockedError, NetError } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import type { PacketHeader } from '../../packet/index.js';
import { DirWatchSet } from '../../queue/watch-set.js';
import type { AllowedSigners } from '../../sign/allowed-signers.js';
import type { SeqFile } from '../../sys/seqfile.js';
import type { StagedOutput } from '../commit/journal.js';
import { effectiveOrder, isMerge, type NetModel, readersOf, type TransitionSpec } from '../model/model.js';
import { Place } from '../place/place.js';
import { placeSigners, signerOf } from '../place/signatures.js';
import type { IndexedToken, Token } from '../place/token.js';
import { INDEX_WINDOW } from '../place/token-index.js';
import { MergeJoins, type MergeView } from '../plan/key-join.js';
import { lookaheadOf } from '../plan/marking.js';
import type { PlaceState } from '../plan/scheduler.js';
import type { RefusedInput, SignedInput } from './inputs.js';
import { judgeFresh, setAsideAtFiring } from './refuse.js';

/** How often each place is looked at (one stat) in case a file event was lost, in seconds. */
const SAFETY_SECONDS = 5;
/** The same for a place a synchronisation tool fills (its events may never come). */
const SYNC_SAFETY_SECONDS = 2;

export class RunPlaces {
  readonly byName = new Map<string, Place>();
  /** Consumer seqfiles of the places this run reads, held for the whole run. */
  readonly consumers = new Map<string, SeqFile>();
  /** Each read place's next number: the run's view of its nextseq. */
  readonly next = new Map<string, bigint>();
  /** How many of a place's tokens the scheduler is shown (lookaheadOf): the head of the place. */
  private readonly lookahead = new Map<string, number>();
  /** Tokens claimed by this run's firings, by place: file names (a set lookup per token). */
  private readonly claimed = new Map<string, Set<string>>();
  /** Whether a token is claimed, one function per place, so that inOrder starts past those it skipped. */
  private readonly isClaimed = new Map<string, (t: Token) => boolean>();
  /** The and-merges' complete sets, kept up to date as tokens are indexed, claimed, freed and gone. */
  private readonly joins: MergeJoins<IndexedToken>;
  /**
   * Places whose tokens this run must know: the ones it reads, bounded ones and inhibiting ones.
   * The others (sinks, error places) are written, never scanned: memory stays flat however many
   * tokens pile up there.
   */
  private readonly indexed = new Set<string>();
  /** Tokens in the places not indexed: counted at the start, plus what this run wrote there (for the live state). */
  private readonly written = new Map<string, number>();
  /** Names this runner itself just wrote or deleted in jobs/: their events are not news. */
  private readonly ownNames = new Set<string>();
  /** Indexed places whose directory must be read again: the next refresh scans these alone. */
  private readonly stale = new Set<Place>();
  private readonly transitions: TransitionSpec[];
  private readonly pollInterval: number | undefined;
  /** Told of every change to what the scheduler sees of an indexed place (its tokens, claims, count). */
  private readonly changed: (place: string) => void;
  /** The signers of the signed places this run scans (refuse.ts judges their new tokens). */
  private readonly signers = new Map<string, AllowedSigners>();
  private readonly net: NetModel;

  constructor(
    net: NetModel,
    transitions: TransitionSpec[],
    opts: { indexWindow?: number; pollInterval?: number; changed?: (place: string) => void },
  ) {
    this.net = net;
    this.transitions = transitions;
    this.pollInterval = opts.pollInterval;
    this.changed = opts.changed ?? (() => {});
    this.joins = new MergeJoins(transitions);
    for (const t of transitions) {
      for (const a of t.inputs) this.indexed.add(a.place);
      for (const p of t.inhibit) this.indexed.add(p);
    }
    for (const p of net.places.values()) if (p.capacity !== undefined) this.indexed.add(p.name);
    for (const spec of net.places.values()) {
      // the key read (and refused, if it can't sign) before anything runs
      if (spec.remote?.key !== undefined) signerOf(spec.remote.key);
      const p = new Place(spec, effectiveOrder(net, spec.name));
      this.byName.set(spec.name, p);
      const claimed = new Set<string>();
      this.claimed.set(spec.name, claimed);
      this.isClaimed.set(spec.name, (t) => claimed.has(t.filename));
      if (!this.indexed.has(spec.name)) continue;
      const signers = placeSigners(net, spec); // read once: a NetError of one line stops the run here
      if (signers) this.signers.set(spec.name, signers);
      this.stale.add(p); // never scanned yet
      p.onStale = () => this.stale.add(p);
    }
    const inRun = new Set(transitions);
    for (const p of net.places.keys()) {
      const readers = readersOf(net, p).filter((t) => inRun.has(t));
      const keyed = readers.some(isMerge);
      this.lookahead.set(p, lookaheadOf(readers));
      // A bounded index; and-merge inputs are indexed whole (looked up by key).
      this.byName
        .get(p)!
        .bound(
          keyed ? undefined : Math.max(opts.indexWindow ?? INDEX_WINDOW, 4 * this.lookahead.get(p)!),
          2 * this.lookahead.get(p)!,
        );
    }
  }

  get(name: string): Place | undefined {
    return this.byName.get(name);
  }

  values(): IterableIterator<Place> {
    return this.byName.values();
  }

  /** Places this run consumes from (the inputs of its transitions). */
  private readPlaces(): Place[] {
    const names = new Set<string>();
    for (const t of this.transitions) for (const a of t.inputs) names.add(a.place);
    return [...names].map((n) => this.byName.get(n)!);
  }

  /** Create missing places, and lock the consumers of the places this run reads. */
  open(): void {
    for (const p of this.byName.values()) p.init();
    for (const p of this.readPlaces()) {
      try {
        const sf = p.queue.lockSeqfile();
        this.consumers.set(p.name, sf);
        this.next.set(p.name, sf.read());
      } catch (err) {
        if (err instanceof LockedError)
          throw new NetError(
            `Place ${p.name} (${p.spec.dir}) is being processed by another program (its nextseq.lock is held)`,
          );
        throw err;
      }
    }
  }

  /** Count the tokens of the places this run does not index (after recovery). */
  countUnindexed(): void {
    for (const p of this.byName.values()) {
      if (this.indexed.has(p.name)) continue;
      try {
        this.written.set(p.name, p.occupancy());
      } catch {
        // a place gone: status reports it
      }
    }
  }

  close(): void {
    for (const sf of this.consumers.values()) sf.release();
    this.consumers.clear();
  }

  /** A name this run is about to write or delete in a place's jobs/: its file event is not news. */
  own(place: string, name: string): void {
    if (this.pollInterval !== undefined) return; // no events to filter
    // A place this run does not scan is not watched (watch): no event will take the name out.
    if (!this.indexed.has(place)) return;
    if (this.ownNames.size > 10_000) this.ownNames.clear(); // events lost: a spurious rescan at worst
    this.ownNames.add(name);
  }

  /** An output this run committed into its place: indexed at once, or counted. */
  published(o: StagedOutput, header: PacketHeader, now: number): void {
    if (this.indexed.has(o.place)) {
      const t = this.byName.get(o.place)!.adopt(path.basename(o.final), header, now);
      // Claimed already, if a scan found it before this call and a firing took it.
      if (t && !t.nop && !this.claimed.get(o.place)!.has(t.filename)) this.joins.add(o.place, t);
      this.changed(o.place);
    } else this.written.set(o.place, (this.written.get(o.place) ?? 0) + 1);
  }

  /** Tokens a firing takes: no other firing may take them until they are consumed or released. */
  claim(tokens: readonly Token[]): void {
    for (const t of tokens) {
      this.claimed.get(t.place)!.add(t.filename);
      this.joins.remove(t.place, t);
      this.changed(t.place);
    }
  }

  /** A claimed token given back (its firing dropped): free again, if its place still holds it. */
  release(t: Token): void {
    // inOrder skipped it: it may be taken again
    if (this.claimed.get(t.place)!.delete(t.filename)) this.byName.get(t.place)!.unskip();
    const now = this.byName.get(t.place)!.tokens.get(t.filename);
    if (now && !now.nop) this.joins.add(t.place, now);
    this.changed(t.place);
  }

  /** A claimed token consumed (its place has forgotten it). */
  consumed(t: Token): void {
    this.claimed.get(t.place)!.delete(t.filename);
    this.changed(t.place);
  }

  /** Whether any place this run scans requires signatures: without, firings judge nothing (inputs.ts). */
  get anySigned(): boolean {
    return this.signers.size > 0;
  }

  /** A signed place's queue and signers, for its firings to judge its tokens again (inputs.ts). */
  signedInput(place: string): SignedInput | undefined {
    const signers = this.signers.get(place);
    return signers && { queue: this.byName.get(place)!.queue, signers };
  }

  /** A token that its firing found refused: set aside as a scan's refusal is (refuse.ts). */
  refuse(r: RefusedInput, log: Logger): void {
    setAsideAtFiring(this.net, this.byName.get(r.token.place)!, r, log);
    this.changed(r.token.place);
  }

  /** An and-merge's complete sets, for the scheduler (undefined for another transition). */
  mergeView(t: TransitionSpec): MergeView<IndexedToken> | undefined {
    return this.joins.view(t);
  }

  /**
   * A place as the scheduler sees it: its first unclaimed tokens, and what the open firings hold
   * (`held`, from their tally). O(lookahead), whatever the tokens waiting.
   */
  placeState(
    name: string,
    held: (place: string, next: bigint) => { next: bigint; claimed: number; incoming: number },
  ): PlaceState {
    const p = this.byName.get(name)!;
    const tokens = p.inOrder(this.lookahead.get(name) ?? 0, this.isClaimed.get(name)!);
    const h = held(name, this.next.get(name) ?? 0n);
    return {
      name,
      order: p.order,
      next: h.next,
      tokens,
      count: p.count,
      claimed: Math.min(h.claimed, p.count),
      incoming: h.incoming,
      capacity: p.spec.capacity,
    };
  }

  /** Scan the indexed places that changed (all: every indexed place). */
  async refresh(all: boolean, log: Logger): Promise<void> {
    const now = Date.now();
    const todo = all ? [...this.byName.values()].filter((p) => this.indexed.has(p.name)) : [...this.stale];
    this.stale.clear(); // a place found stale again while it is scanned goes back in
    for (const p of todo) {
      const before = p.tokens;
      const count = p.count;
      try {
        let fresh = await p.refresh(now, p.order === 'sequence' ? this.next.get(p.name) : undefined);
        const signers = this.signers.get(p.name);
        if (signers && fresh.length > 0) {
          // Judged before the scheduler sees them: a refused token is set aside, never fired.
          const judged = await judgeFresh(this.net, p, fresh, signers, log);
          fresh = judged.admitted;
        }
        for (const t of fresh)
          log.debug('net', () => `Read the header of job ${t.filename} in place ${p.name} (#${t.seq})`);
        if (this.joins.reads(p.name)) this.joined(p, before.values(), fresh);
        // The same tokens (none new, none gone) and the same count: nothing the scheduler sees has changed.
        if (fresh.length === 0 && p.tokens.size === before.size && p.count === count) continue;
      } catch (err) {
        // A place gone (unmounted, deleted) is reported by status; its tokens are unknown meanwhile.
        log.debug('net', () => `Cannot scan ${p.name}: ${(err as Error).message}`);
        if (this.joins.reads(p.name)) this.joined(p, p.tokens.values(), []);
        p.clear();
      }
      this.changed(p.name);
    }
  }

  /** A scan's news for the and-merges reading p: tokens gone from the index (of `before`), tokens new to it. */
  private joined(p: Place, before: Iterable<IndexedToken>, fresh: readonly IndexedToken[]): void {
    for (const t of before) if (p.tokens.get(t.filename) !== t) this.joins.remove(p.name, t);
    const claimed = this.claimed.get(p.name)!;
    for (const t of fresh) if (!t.nop && !claimed.has(t.filename)) this.joins.add(p.name, t);
  }

  /**
   * Watch the jobs/ of every place this run scans, all through one DirWatchSet (one inotify instance, one timer for
   * every safety look): a change marks the place to scan and calls onChange. Returns the stop.
   */
  watch(onChange: () => void, log: Logger): () => void {
    const set = new DirWatchSet<Place>(
      (p) => {
        p.markDirty();
        onChange();
      },
      { pollInterval: this.pollInterval, safetyInterval: SAFETY_SECONDS, logger: log },
    );
    const filter = (name: string) => !this.ownNames.delete(name);
    // Only the places this run scans: an event elsewhere (a sink, an error place) would change nothing here.
    // A place filled by a synchronisation tool is looked at more often: events may not come.
    for (const p of this.byName.values())
      if (this.indexed.has(p.name))
        set.add(p, p.queue.jobsDir, {
          filter,
          safetyInterval: p.spec.sync === true ? SYNC_SAFETY_SECONDS : SAFETY_SECONDS,
        });
    return () => set.close();
  }

  /** Each place's token count, for the live state: indexed ones as last scanned, the others as counted. */
  counts(): Array<[string, number]> {
    return [...this.byName.values()].map((p) => [
      p.name,
      this.indexed.has(p.name) ? p.count : (this.written.get(p.name) ?? 0),
    ]);
  }
}
