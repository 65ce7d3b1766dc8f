import type { Store } from "../../store/store.js";

/** Sessions a node remembers the owner of at most before it starts over. */
const MAX_REMEMBERED = 100_000;

/**
 * Which key owns a session. A session's owner never changes, so a node remembers each
 * answer for good (bounded); `known` answers from memory only, for the SSE fan-out, where
 * an event must not wait for the store unless its session is new to this node.
 */
export class SessionOwners {
  private readonly owners = new Map<string, string | null>();
  private readonly lookups = new Map<string, Promise<string | null | undefined>>();

  constructor(private readonly store: Pick<Store, "getSession">) {}

  remember(sessionId: string, owner: string | null): void {
    if (this.owners.size >= MAX_REMEMBERED) this.owners.clear();
    this.owners.set(sessionId, owner);
  }

  /** The owner from memory: a key id, null (the server secret's), or undefined when not known here. */
  known(sessionId: string): string | null | undefined {
    return this.owners.get(sessionId);
  }

  /** The owner, from memory or the store; undefined for a session that does not exist. */
  async of(sessionId: string): Promise<string | null | undefined> {
    const known = this.owners.get(sessionId);
    if (known !== undefined) return known;
    let pending = this.lookups.get(sessionId);
    if (!pending) {
      pending = this.store.getSession(sessionId).then((row) => {
        this.lookups.delete(sessionId);
        if (row) this.remember(sessionId, row.owner_key);
        return row?.owner_key;
      }, (error: unknown) => {
        this.lookups.delete(sessionId);
        throw error;
      });
      this.lookups.set(sessionId, pending);
    }
    return pending;
  }

  /** A test of "is this session the key's" that answers at once when it can (see known). */
  gate(keyId: string): (sessionId: string) => boolean | Promise<boolean> {
    return (sessionId) => {
      const known = this.owners.get(sessionId);
      if (known !== undefined) return known === keyId;
      return this.of(sessionId).then((owner) => owner === keyId, () => false);
    };
  }
}
