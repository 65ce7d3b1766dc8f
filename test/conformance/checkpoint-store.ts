import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { FileContent, NewCheckpoint, Store } from "../../src/store/store.js";

const sha = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** A file's content cut into chunks of `size` bytes, addressed as the store expects. */
function content(text: string | Buffer, size = 4): FileContent {
  const data = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const chunks = [];
  for (let at = 0; at < data.length; at += size) {
    const part = data.subarray(at, at + size);
    chunks.push({ hash: sha(part), data: Buffer.from(part) });
  }
  return { hash: sha(data), chunks };
}

/** The checkpoint half of the Store contract (store/checkpoints.ts); `current` is the suite's open store. */
export function checkpointConformance(current: () => Store): void {
  describe("checkpoints", () => {
    const session = (id: string) => current().createSession({ id, agent: "default", mode: "chat" });
    const turn = (id: string, sessionId: string, files: NewCheckpoint["files"], messageId = `m-${id}`): NewCheckpoint => ({ id, session_id: sessionId, message_id: messageId, kind: "turn", files });

    it("stores a turn's files with their before-content and lists them oldest first, by kind", async () => {
      const store = current();
      await session("s1");
      const a = content("hello, world");
      const binary = content(Buffer.from([0, 255, 1, 254, 0, 0, 7]));
      await store.addCheckpoint(
        turn("c1", "s1", [
          { path: "a.txt", change: "modified", before_hash: a.hash, before_mode: 0o644 },
          { path: "new/b.bin", change: "added", before_hash: null, before_mode: null },
          { path: "bin/x", change: "deleted", before_hash: binary.hash, before_mode: 0o755 },
        ]),
        [a, binary],
      );
      await store.addCheckpoint({ ...turn("c2", "s1", []), kind: "revert", data: { messageIds: ["m1"] } }, []);
      const all = await store.listCheckpoints("s1");
      expect(all.map((c) => [c.id, c.kind, c.reverted])).toEqual([
        ["c1", "turn", false],
        ["c2", "revert", false],
      ]);
      expect(all[0]!.message_id).toBe("m-c1");
      expect(all[0]!.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(all[0]!.files).toEqual([
        { path: "a.txt", change: "modified", before_hash: a.hash, before_mode: 0o644 },
        { path: "bin/x", change: "deleted", before_hash: binary.hash, before_mode: 0o755 },
        { path: "new/b.bin", change: "added", before_hash: null, before_mode: null },
      ]);
      expect(all[1]!.data).toEqual({ messageIds: ["m1"] });
      expect((await store.listCheckpoints("s1", { kind: "turn" })).map((c) => c.id)).toEqual(["c1"]);
      expect((await store.readFileContent(a.hash))?.toString()).toBe("hello, world");
      expect(await store.readFileContent(binary.hash)).toEqual(Buffer.from([0, 255, 1, 254, 0, 0, 7]));
      expect(await store.readFileContent(sha(Buffer.from("never stored")))).toBeUndefined();
    });

    it("keeps one copy of a chunk however many files and checkpoints hold it", async () => {
      const store = current();
      await session("s1");
      await session("s2");
      // "abcd" is a chunk of both files; both checkpoints hold the first file.
      const one = content("abcdefgh");
      const two = content("abcdWXYZ");
      await store.addCheckpoint(turn("c1", "s1", [{ path: "f", change: "modified", before_hash: one.hash, before_mode: 0o644 }]), [one]);
      await store.addCheckpoint(turn("c2", "s2", [{ path: "f", change: "modified", before_hash: one.hash, before_mode: 0o644 }, { path: "g", change: "modified", before_hash: two.hash, before_mode: 0o600 }]), [one, two]);
      expect((await store.readFileContent(one.hash))?.toString()).toBe("abcdefgh");
      expect((await store.readFileContent(two.hash))?.toString()).toBe("abcdWXYZ");
      // Dropping s1's checkpoints keeps what s2 still holds.
      await store.deleteCheckpoints("s1");
      expect(await store.listCheckpoints("s1")).toEqual([]);
      expect((await store.readFileContent(one.hash))?.toString()).toBe("abcdefgh");
      await store.deleteCheckpoints("s2");
      expect(await store.readFileContent(one.hash)).toBeUndefined();
      expect(await store.readFileContent(two.hash)).toBeUndefined();
    });

    it("a revert flags messages and turns in one write; undoing it clears them and drops its record's content", async () => {
      const store = current();
      await session("s1");
      const m1 = await store.appendMessage({ id: "m1", session_id: "s1", role: "user", content: "one" });
      const m2 = await store.appendMessage({ id: "m2", session_id: "s1", role: "assistant", content: "two" });
      const before = content("before the turn");
      await store.addCheckpoint(turn("c1", "s1", [{ path: "f", change: "modified", before_hash: before.hash, before_mode: 0o644 }], "m1"), [before]);
      const found = content("as the revert found it");
      const record: NewCheckpoint = { id: "r1", session_id: "s1", message_id: "m1", kind: "revert", files: [{ path: "f", change: "modified", before_hash: found.hash, before_mode: 0o644 }], data: { messageIds: ["m1", "m2"], checkpointIds: ["c1"] } };
      await store.applyRevert({ sessionId: "s1", messageIds: [m1.id, m2.id], checkpointIds: ["c1"], record, contents: [found] });
      expect((await store.listMessages("s1")).map((m) => [m.id, m.reverted])).toEqual([
        ["m1", true],
        ["m2", true],
      ]);
      expect((await store.getMessage("m1"))?.reverted).toBe(true);
      const flagged = await store.listCheckpoints("s1");
      expect(flagged.map((c) => [c.id, c.kind, c.reverted])).toEqual([
        ["c1", "turn", true],
        ["r1", "revert", false],
      ]);
      expect((await store.readFileContent(found.hash))?.toString()).toBe("as the revert found it");

      await store.undoRevert({ sessionId: "s1", messageIds: ["m1", "m2"], checkpointIds: ["c1"], recordId: "r1" });
      expect((await store.listMessages("s1")).map((m) => m.reverted)).toEqual([false, false]);
      expect((await store.listCheckpoints("s1")).map((c) => [c.id, c.reverted])).toEqual([["c1", false]]);
      expect(await store.readFileContent(found.hash)).toBeUndefined();
      expect((await store.readFileContent(before.hash))?.toString()).toBe("before the turn");
    });

    it("new messages are not reverted, and a fork's row carries forked_from", async () => {
      const store = current();
      await session("s1");
      expect((await store.appendMessage({ id: "m1", session_id: "s1", role: "user", content: "x" })).reverted).toBe(false);
      const fork = await store.createSession({ id: "s2", agent: "default", mode: "chat", forked_from: "s1" });
      expect(fork.forked_from).toBe("s1");
      expect((await store.getSession("s2"))?.forked_from).toBe("s1");
      expect((await store.getSession("s1"))?.forked_from).toBeNull();
    });

    it("rejects a checkpoint of a missing session and stores nothing of it", async () => {
      const store = current();
      const c = content("orphan");
      await expect(store.addCheckpoint(turn("c1", "nope", [{ path: "f", change: "modified", before_hash: c.hash, before_mode: 0o644 }]), [c])).rejects.toThrow();
      expect(await store.readFileContent(c.hash)).toBeUndefined();
    });
  });
}
