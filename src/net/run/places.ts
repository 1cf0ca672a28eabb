/**
 * The places as one run sees them: which it indexes and how much of each (the lookahead and the
 * window), the consumers' locks of the places it reads and their next numbers, the names it wrote
 * itself (their file events are not news), and the token counts of the places it only writes.
 */
import path from 'node:path';
import { LockedError, NetError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { PacketHeader } from '../../packet/index.js';
import type { SeqFile } from '../../seqfile.js';
import { JobsWatcher } from '../../watch.js';
import { effectiveOrder, isMerge, readersOf, type NetModel, type TransitionSpec } from '../model/model.js';
import { MergeJoins, type MergeView } from '../plan/key-join.js';
import { lookaheadOf } from '../plan/marking.js';
import type { PlaceState } from '../plan/scheduler.js';
import { Place } from '../place/place.js';
import { INDEX_WINDOW } from '../place/token-index.js';
import type { IndexedToken, Token } from '../place/token.js';
import type { StagedOutput } from './journal.js';

export class RunPlaces {
  /** Every place of the net, by name. */
  readonly byName = new Map<string, Place>();
  /** Consumer seqfiles of the places this run reads, held for the whole run. */
  readonly consumers = new Map<string, SeqFile>();
  /** Each read place's next number: the run's view of its nextseq. */
  readonly next = new Map<string, bigint>();
  /** How many of a place's tokens the scheduler is shown (lookaheadOf): the head of the place. */
  private readonly lookahead = new Map<string, number>();
  /** Tokens claimed by this run's firings, by place: file names (a set lookup per token). */
  private readonly claimed = new Map<string, Set<string>>();
  /** Whether a token is claimed, by place: one function each, so that inOrder starts past the claimed tokens it skipped last time. */
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
  /** The transitions of this run. */
  private readonly transitions: TransitionSpec[];
  private readonly pollInterval: number | undefined;

  constructor(net: NetModel, transitions: TransitionSpec[], opts: { indexWindow?: number; pollInterval?: number }) {
    this.transitions = transitions;
    this.pollInterval = opts.pollInterval;
    this.joins = new MergeJoins(transitions);
    for (const spec of net.places.values()) {
      this.byName.set(spec.name, new Place(spec, effectiveOrder(net, spec.name)));
      const claimed = new Set<string>();
      this.claimed.set(spec.name, claimed);
      this.isClaimed.set(spec.name, (t) => claimed.has(t.filename));
    }
    for (const t of transitions) {
      for (const a of t.inputs) this.indexed.add(a.place);
      for (const p of t.inhibit) this.indexed.add(p);
    }
    for (const p of net.places.values()) if (p.capacity !== undefined) this.indexed.add(p.name);
    const inRun = new Set(transitions);
    for (const p of net.places.keys()) {
      const readers = readersOf(net, p).filter((t) => inRun.has(t));
      const keyed = readers.some(isMerge);
      this.lookahead.set(p, lookaheadOf(readers));
      // A bounded index, so that memory does not grow with the tokens waiting; and-merge inputs are indexed whole (looked up by key).
      this.byName.get(p)!.bound(keyed ? undefined : Math.max(opts.indexWindow ?? INDEX_WINDOW, 4 * this.lookahead.get(p)!), 2 * this.lookahead.get(p)!);
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
        if (err instanceof LockedError) throw new NetError(`Place ${p.name} (${p.spec.dir}) is being processed by another program (its nextseq.lock is held)`);
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

  /** Release the consumers' locks. */
  close(): void {
    for (const sf of this.consumers.values()) sf.release();
    this.consumers.clear();
  }

  /** A name this run is about to write or delete in a jobs/: its file event is not news. */
  own(name: string): void {
    if (this.pollInterval !== undefined) return; // no events to filter
    if (this.ownNames.size > 10_000) this.ownNames.clear(); // events lost: a spurious rescan at worst
    this.ownNames.add(name);
  }

  /** An output this run committed into its place: indexed at once, or counted. */
  published(o: StagedOutput, header: PacketHeader, now: number): void {
    if (this.indexed.has(o.place)) {
      const t = this.byName.get(o.place)!.adopt(path.basename(o.final), header, now);
      // Claimed already, if a scan found it before this call and a firing took it.
      if (t && !t.nop && !this.claimed.get(o.place)!.has(t.filename)) this.joins.add(o.place, t);
    } else this.written.set(o.place, (this.written.get(o.place) ?? 0) + 1);
  }

  /** Tokens a firing takes: no other firing may take them until they are consumed or released. */
  claim(tokens: readonly Token[]): void {
    for (const t of tokens) {
      this.claimed.get(t.place)!.add(t.filename);
      this.joins.remove(t.place, t);
    }
  }

  /** A claimed token given back (its firing dropped): free again, if its place still holds it. */
  release(t: Token): void {
    if (this.claimed.get(t.place)!.delete(t.filename)) this.byName.get(t.place)!.unskip(); // inOrder skipped it: it may be taken again
    const now = this.byName.get(t.place)!.tokens.get(t.filename);
    if (now && !now.nop) this.joins.add(t.place, now);
  }

  /** A claimed token consumed (its place has forgotten it). */
  consumed(t: Token): void {
    this.claimed.get(t.place)!.delete(t.filename);
  }

  /** An and-merge's complete sets, for the scheduler (undefined for another transition). */
  mergeView(t: TransitionSpec): MergeView<IndexedToken> | undefined {
    return this.joins.view(t);
  }

  /**
   * The places as the scheduler sees them: the head of each (its first unclaimed tokens), and what
   * the open firings hold (`held`: as heldBy in plan/marking.ts, from the open firings' tally).
   * O(lookahead) per place, whatever the tokens waiting: an and-merge's sets come from its join
   * (mergeView), and the index's tokens are the scheduler's TokenRefs.
   */
  marking(held: (place: string, next: bigint) => { next: bigint; claimed: number; incoming: number }): Map<string, PlaceState> {
    const m = new Map<string, PlaceState>();
    for (const p of this.byName.values()) {
      const tokens = p.inOrder(this.lookahead.get(p.name) ?? 0, this.isClaimed.get(p.name)!);
      const h = held(p.name, this.next.get(p.name) ?? 0n);
      m.set(p.name, { name: p.name, order: p.order, next: h.next, tokens, count: p.count, claimed: Math.min(h.claimed, p.count), incoming: h.incoming, capacity: p.spec.capacity });
    }
    return m;
  }

  /** Scan the indexed places that changed (all of them: every indexed place). */
  async refresh(all: boolean, log: Logger): Promise<void> {
    const now = Date.now();
    for (const p of this.byName.values()) {
      if (!this.indexed.has(p.name) || (!all && !p.dirty)) continue;
      try {
        const before = p.tokens;
        const fresh = await p.refresh(now, p.order === 'sequence' ? this.next.get(p.name) : undefined);
        for (const t of fresh) log.debug('net', () => `Read the header of job ${t.filename} in place ${p.name} (#${t.seq})`);
        if (this.joins.reads(p.name)) this.joined(p, before.values(), fresh);
      } catch (err) {
        // A place gone (unmounted, deleted) is reported by status; its tokens are unknown meanwhile.
        log.debug('net', () => `Cannot scan ${p.name}: ${(err as Error).message}`);
        if (this.joins.reads(p.name)) this.joined(p, p.tokens.values(), []);
        p.clear();
      }
    }
  }

  /** A scan's news for the and-merges reading p: tokens gone from the index (of `before`), tokens new to it. */
  private joined(p: Place, before: Iterable<IndexedToken>, fresh: readonly IndexedToken[]): void {
    for (const t of before) if (p.tokens.get(t.filename) !== t) this.joins.remove(p.name, t);
    const claimed = this.claimed.get(p.name)!;
    for (const t of fresh) if (!t.nop && !claimed.has(t.filename)) this.joins.add(p.name, t);
  }

  /** Watch every place's jobs/ (into watchers, which the caller closes); a change marks the place dirty and calls onChange. */
  watch(watchers: JobsWatcher[], onChange: () => void, signal: AbortSignal, log: Logger): void {
    for (const p of this.byName.values()) {
      const w = new JobsWatcher(p.queue.jobsDir, {
        pollInterval: this.pollInterval,
        logger: log,
        // A place filled by a synchronisation tool is looked at more often: events may not come.
        safetyInterval: p.spec.sync === true ? 2 : 5,
        filter: (name) => !this.ownNames.delete(name),
      });
      watchers.push(w);
      void (async () => {
        while (await w.wait(signal)) {
          p.markDirty();
          onChange();
        }
      })();
    }
  }

  /** Each place's token count, for the live state: indexed ones as last scanned, the others as counted. */
  counts(): Array<[string, number]> {
    return [...this.byName.values()].map((p) => [p.name, this.indexed.has(p.name) ? p.count : (this.written.get(p.name) ?? 0)]);
  }
}
