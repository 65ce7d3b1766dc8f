import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { RuntimeHarness } from "../helpers/runtime.js";
import { BINARY, bash, checkpoints, json, modeOf, seedWorkspace, text, turn, userMessageIds, type Serve } from "./helpers.js";

/**
 * Two turns that change files through every kind of tool, then revert, unrevert and revert
 * again, checking the files, the modes and the history the model is sent. Run against
 * each store driver.
 */
export async function revertFlow(h: RuntimeHarness, server: Serve): Promise<void> {
  const root = h.ws.root;
  seedWorkspace(root);
  const { id } = await json<{ id: string }>(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
  const abs = (p: string) => join(root, p);

  await turn(h, server, id, "first turn", [
    [{ tool: "read_file", input: { file: abs("a.txt") } }],
    [
      { tool: "edit_file", input: { file: abs("a.txt"), old_string: "one", new_string: "ONE" } },
      { tool: "write_file", input: { file: abs("new/dir/created.txt"), content: "created\n" } },
    ],
    [bash("rm img.bin && chmod 644 bin/tool.sh && printf 'changed\\n' > keep/deep/nested.txt && echo x > node_modules/pkg/y.js && echo x > .git/x")],
  ]);
  const [m1] = await userMessageIds(server, id);
  const first = await checkpoints(server, id);
  expect(first.checkpoints).toHaveLength(1);
  expect(first.checkpoints[0]!.messageId).toBe(m1);
  expect(first.checkpoints[0]!.files).toEqual([
    { path: "a.txt", change: "modified" },
    { path: "bin/tool.sh", change: "modified" },
    { path: "img.bin", change: "deleted" },
    { path: "keep/deep/nested.txt", change: "modified" },
    { path: "new/dir/created.txt", change: "added" },
  ]);

  await turn(h, server, id, "second turn", [[bash("printf two > a.txt && printf '\\000\\001\\377' > b.bin && mkdir -p x/y && echo z > x/y/z.txt")]]);
  const [, m2] = await userMessageIds(server, id);
  // A turn that changes nothing leaves no checkpoint.
  await turn(h, server, id, "third turn, reads only", [[bash("cat a.txt")]]);
  const listed = await checkpoints(server, id);
  expect(listed.checkpoints.map((c) => c.messageId)).toEqual([m1, m2]);
  expect(listed.checkpoints[1]!.files).toEqual([
    { path: "a.txt", change: "modified" },
    { path: "b.bin", change: "added" },
    { path: "x/y/z.txt", change: "added" },
  ]);
  expect(listed.revert).toBeNull();
  expect(listed.reverted).toEqual([]);

  // Revert from the first turn: every file as it was before it.
  const reverted = await json(await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: m1 }) }));
  expect(reverted.messageId).toBe(m1);
  expect(reverted.files).toEqual(
    expect.arrayContaining([
      { path: "a.txt", change: "modified" },
      { path: "img.bin", change: "deleted" },
      { path: "new/dir/created.txt", change: "added" },
      { path: "b.bin", change: "added" },
    ]),
  );
  expect(text(root, "a.txt")).toBe("one\n");
  expect(readFileSync(join(root, "img.bin"))).toEqual(BINARY);
  expect(modeOf(root, "bin/tool.sh")).toBe(0o755);
  expect(text(root, "bin/tool.sh")).toBe("#!/bin/sh\necho hi\n");
  expect(text(root, "keep/deep/nested.txt")).toBe("nested\n");
  expect(text(root, "new/dir/created.txt")).toBeNull();
  expect(text(root, "b.bin")).toBeNull();
  expect(text(root, "x/y/z.txt")).toBeNull();
  // Folders never checkpointed are left as the turn left them.
  expect(text(root, "node_modules/pkg/y.js")).toBe("x\n");
  const rows = await json<{ id: string; role: string; reverted: boolean }[]>(await server.fetch(`/sessions/${id}/messages`));
  expect(rows.length).toBeGreaterThan(4);
  expect(rows.every((r) => r.reverted)).toBe(true);
  const afterRevert = await checkpoints(server, id);
  expect(afterRevert.checkpoints).toEqual([]);
  expect(afterRevert.revert).toMatchObject({ messageId: m1 });
  // The user messages whose turns are reverted (the dashboard marks them).
  expect(afterRevert.reverted).toEqual(rows.filter((r) => r.role === "user").map((r) => r.id));
  expect(afterRevert.reverted).toContain(m1);

  // Unrevert: the files and the history as they were before the revert.
  const undone = await json(await server.fetch(`/sessions/${id}/unrevert`, { method: "POST" }));
  expect(undone.messageId).toBe(m1);
  expect(text(root, "a.txt")).toBe("two");
  expect(readFileSync(join(root, "b.bin"))).toEqual(Buffer.from([0, 1, 255]));
  expect(text(root, "img.bin")).toBeNull();
  expect(modeOf(root, "bin/tool.sh")).toBe(0o644);
  expect(text(root, "new/dir/created.txt")).toBe("created\n");
  expect((await json<{ reverted: boolean }[]>(await server.fetch(`/sessions/${id}/messages`))).some((r) => r.reverted)).toBe(false);
  expect((await checkpoints(server, id)).checkpoints.map((c) => c.messageId)).toEqual([m1, m2]);
  expect((await checkpoints(server, id)).reverted).toEqual([]);
  // Nothing left to undo.
  expect((await server.fetch(`/sessions/${id}/unrevert`, { method: "POST" })).status).toBe(409);

  // Revert the second turn only: the first turn's work stays; the model no longer sees turns two and three.
  await json(await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: m2 }) }));
  expect(text(root, "a.txt")).toBe("ONE\n");
  expect(text(root, "b.bin")).toBeNull();
  expect(text(root, "new/dir/created.txt")).toBe("created\n");
  const before = h.llm.completionRequests.length;
  await turn(h, server, id, "after the revert", []);
  const sent = JSON.stringify(h.llm.completionRequests[before]!.body.messages);
  expect(sent).toContain("first turn");
  expect(sent).not.toContain("second turn");
  expect(sent).not.toContain("third turn");
  // A message came after the revert: it can no longer be undone.
  const refused = await server.fetch(`/sessions/${id}/unrevert`, { method: "POST" });
  expect(refused.status).toBe(409);
  expect((await refused.json()).error.code).toBe("CONFLICT");
}
