import type { NewStoredEvent, StoredEvent } from "../../store/store.js";
import { REPLAY_PAGE } from "../event-log.js";
import type { RunFences } from "./fencing.js";

/**
 * The event log's writer on a cluster node (its EventLog `append`): each batch goes through
 * the fences of this node's runs, so rows of a run whose lease was taken are refused, and
 * the gseqs it wrote are remembered so the relay of other nodes' rows can skip this node's own.
 */
export class FencedEventWriter {
  private readonly own = new Set<number>();

  constructor(private readonly fences: RunFences) {}

  readonly append = async (rows: readonly NewStoredEvent[]): Promise<(StoredEvent | null)[]> => {
    const written = await this.fences.appendEvents(rows);
    for (const row of written) if (row) this.own.add(row.gseq);
    return written;
  };

  /** True (once) when this node wrote the row with `gseq`. */
  takeOwn(gseq: number): boolean {
    return this.own.delete(gseq);
  }

  /** True (and forgotten) when this node wrote every gseq in (after, upTo]: nothing there to relay. */
  takeOwnRange(after: number, upTo: number): boolean {
    if (upTo <= after || upTo - after > REPLAY_PAGE) return false;
    for (let g = after + 1; g <= upTo; g++) if (!this.own.has(g)) return false;
    for (let g = after + 1; g <= upTo; g++) this.own.delete(g);
    return true;
  }
}
