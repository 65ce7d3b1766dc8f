import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import type { RuntimeHarness } from "../helpers/runtime.js";

export type Serve = Awaited<ReturnType<RuntimeHarness["serve"]>>;

export const BINARY = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13, 0x80]);

/** A workspace with text, an executable, a binary file, a nested folder and the folders never checkpointed. */
export function seedWorkspace(root: string): void {
  const put = (path: string, data: string | Buffer, mode = 0o644) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), data);
    chmodSync(join(root, path), mode);
  };
  put("a.txt", "one\n");
  put("bin/tool.sh", "#!/bin/sh\necho hi\n", 0o755);
  put("img.bin", BINARY);
  put("keep/deep/nested.txt", "nested\n");
  put("node_modules/pkg/index.js", "module.exports = 1;\n");
  put(".git/HEAD", "ref: refs/heads/main\n");
}

export function text(root: string, path: string): string | null {
  return existsSync(join(root, path)) ? readFileSync(join(root, path), "utf8") : null;
}

export function modeOf(root: string, path: string): number {
  return statSync(join(root, path)).mode & 0o777;
}

export async function json<T = any>(response: Response, status = 200): Promise<T> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return JSON.parse(body) as T;
}

/** One chat turn: the model runs each step's tool calls in order, then says `done`. */
export async function turn(h: RuntimeHarness, server: Serve, sessionId: string, message: string, steps: { tool: string; input: unknown }[][]): Promise<void> {
  for (const step of steps) {
    const builder = reply();
    for (const call of step) builder.tool(call.tool, call.input);
    h.llm.enqueue(builder.stop());
  }
  h.llm.enqueue(reply().text("done").stop());
  await json(await server.fetch(`/sessions/${sessionId}/chat`, { method: "POST", body: JSON.stringify({ message }) }));
}

export async function userMessageIds(server: Serve, sessionId: string): Promise<string[]> {
  const rows = await json<{ id: string; role: string }[]>(await server.fetch(`/sessions/${sessionId}/messages`));
  return rows.filter((r) => r.role === "user").map((r) => r.id);
}

export async function checkpoints(server: Serve, sessionId: string): Promise<{ checkpoints: { id: string; messageId: string; createdAt: string; files: { path: string; change: string }[] }[]; revert: unknown; reverted: string[] }> {
  return json(await server.fetch(`/sessions/${sessionId}/checkpoints`));
}

export const bash = (command: string) => ({ tool: "bash", input: { command } });
