import type { VeilEvent } from "../base/events.js";
import { createLogger } from "../base/log.js";
import { createRuntime } from "../runtime.js";
import { preview } from "../tools/format.js";

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

/** One turn in process (no server): assistant text to stdout, tool activity to stderr. Returns the exit code. */
export async function runOnce(command: { workspace: string; agent: string; model?: string; json: boolean; prompt: string }, io: CliIo): Promise<number> {
  const runtime = await createRuntime({
    workspace: command.workspace,
    mode: "oneshot",
    env: io.env,
    log: createLogger({ level: (io.env.VEIL_LOG_LEVEL as "warn" | undefined) ?? "warn", write: (line) => io.stderr(line + "\n") }),
  });
  let exitCode = 1;
  try {
    const session = await runtime.sessions.create({ agent: command.agent });
    let endedWithNewline = true;
    runtime.bus.subscribe({ sessionId: session.id }, (event: VeilEvent) => {
      if (command.json) {
        io.stdout(JSON.stringify(event) + "\n");
        return;
      }
      switch (event.type) {
        case "chat.chunk":
          io.stdout(event.content);
          endedWithNewline = event.content.endsWith("\n");
          break;
        case "tool.start":
          io.stderr(`▸ ${event.toolName} ${preview(JSON.stringify(event.toolInput ?? {}), 160)}\n`);
          break;
        case "tool.end":
          io.stderr(`${event.success ? "✓" : "✗"} ${event.toolName} (${event.durationMs} ms) ${preview(event.output.replace(/\s+/g, " "), 160)}\n`);
          break;
        default:
          break;
      }
    });
    const receipt = await runtime.sessions.send(session.id, command.prompt, { model: command.model, meta: { source: "cli" } });
    const result = await receipt.result;
    if (!command.json && !endedWithNewline) io.stdout("\n");
    if (result.stopReason === "error") {
      io.stderr(`error: ${result.error?.code ?? "ERROR"}: ${result.error?.message ?? "run failed"}\n`);
      exitCode = 1;
    } else if (result.stopReason === "cancelled") {
      exitCode = 130;
    } else {
      if (result.stopReason !== "stop") io.stderr(`run stopped: ${result.stopReason}\n`);
      exitCode = result.stopReason === "stop" || result.stopReason === "length" ? 0 : 2;
    }
    await runtime.sessions.close(session.id);
  } finally {
    await runtime.close();
  }
  return exitCode;
}
