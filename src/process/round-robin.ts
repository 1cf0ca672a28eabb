/**
 * A line of waiting for turns, first come first served: an item back from its turn goes to the
 * end, so that each gets one turn per round, however much it has to do (processQueues' queues).
 * An item may leave the line without being found in it: `next` skips the ones no longer waiting.
 */
export class Turns<T> {
  private items: T[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  /** The next item that is still waiting (`waiting` says), taken from the line; undefined when none is. */
  next(waiting: (item: T) => boolean): T | undefined {
    while (this.head < this.items.length) {
      const item = this.items[this.head++]!;
      if (waiting(item)) {
        this.compact();
        return item;
      }
    }
    this.items = [];
    this.head = 0;
    return undefined;
  }

  /** Items in the line, counting those that left it without being taken out yet. */
  get length(): number {
    return this.items.length - this.head;
  }

  /** Drop the taken items' slots once they are most of the array: O(1) a turn, amortised. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
