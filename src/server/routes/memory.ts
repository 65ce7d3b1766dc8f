import type { Context, Hono } from "hono";
import { VeilError } from "../../errors.js";
import { readMemoryFile, resolveMemoryFile, writeMemoryFileAtomic } from "../../tools/shared/memory-files.js";
import type { AppEnv, ServerState } from "../context.js";

/**
 * GET/PUT /memory/:file and /agents/:name/memory/:file. PUT is a literal,
 * atomic overwrite (unlike memory_write over HTTP: no dedup, no empty guard).
 * Names are checked so nothing reaches outside the memory folder.
 */
export function memoryRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const memoryDir = state.runtime.config.paths.memoryDir;

  const read = async (c: Context<AppEnv>, file: string, agent?: string) => {
    const path = resolveMemoryFile(memoryDir, file, agent);
    const content = await readMemoryFile(path);
    if (content === null) throw new VeilError("NOT_FOUND", `no memory file ${JSON.stringify(file)}${agent ? ` for agent ${JSON.stringify(agent)}` : ""}`);
    return (c.req.header("accept") ?? "").includes("application/json") ? c.json({ file, agent: agent ?? null, content }) : c.text(content);
  };

  const write = async (c: Context<AppEnv>, file: string, agent?: string) => {
    const path = resolveMemoryFile(memoryDir, file, agent);
    const content = await bodyContent(c);
    await writeMemoryFileAtomic(path, content);
    return c.json({ ok: true, file, agent: agent ?? null, bytes: Buffer.byteLength(content) });
  };

  app.get("/memory/:file", (c) => read(c, c.req.param("file")));
  app.put("/memory/:file", (c) => write(c, c.req.param("file")));
  app.get("/agents/:name/memory/:file", (c) => read(c, c.req.param("file"), c.req.param("name")));
  app.put("/agents/:name/memory/:file", (c) => write(c, c.req.param("file"), c.req.param("name")));
}

/** Raw text/plain body, or `{ "content": "…" }` as JSON. */
async function bodyContent(c: Context<AppEnv>): Promise<string> {
  const type = c.req.header("content-type") ?? "";
  const text = await c.req.text();
  if (!type.includes("application/json")) return text;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new VeilError("VALIDATION_ERROR", "request body is not valid JSON");
  }
  if (!data || typeof data !== "object" || typeof (data as { content?: unknown }).content !== "string") {
    throw new VeilError("VALIDATION_ERROR", 'JSON body must be { "content": "<text>" }');
  }
  return (data as { content: string }).content;
}
