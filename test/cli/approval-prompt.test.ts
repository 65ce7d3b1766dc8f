/**
 * `veil run` and approvals: on a terminal it asks on stdin (y/N), elsewhere it denies at
 * once. The terminal is a real pseudo-terminal (util-linux `script`).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NO_TERMINAL_REASON } from "../../src/cli/approval-prompt.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { shellQuote } from "../../src/tools/shared/shell/bash-script.js";

const MAIN = join(process.cwd(), "dist/src/main.js");
const SCRIPT = "/usr/bin/script";
let ws: TempWorkspace;
let llm: FakeLlm;

beforeEach(async () => {
  ws = tmpWorkspace();
  llm = await startFakeLlm();
  mkdirSync(join(ws.root, ".veil"), { recursive: true });
  writeFileSync(join(ws.root, ".veil", "settings.json"), JSON.stringify({ approval: { tools: ["write_file"] } }));
});
afterEach(async () => {
  await llm.close();
  ws.cleanup();
});

const env = () => ({ ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, ".home"), HOME: join(ws.root, ".home"), NO_COLOR: "1", TERM: "dumb" });

/** Runs `command` with `stdio`; `onOutput` sees everything printed so far and may type on stdin. */
function run(command: string, args: string[], onOutput?: (text: string, type: (line: string) => void) => void): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: env(), cwd: ws.root, stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    const seen = (data: Buffer) => {
      output += data.toString();
      onOutput?.(output, (line) => child.stdin.write(line));
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    child.on("exit", (code) => {
      child.stdin.destroy();
      resolve({ code, output });
    });
  });
}

const toolResult = () => (llm.completionRequests[1]!.body.messages as { role: string; content: string }[]).find((m) => m.role === "tool")?.content;

describe.skipIf(!existsSync(MAIN))("veil run asks before a call that needs approval", { timeout: 60_000 }, () => {
  it("denies at once when stdin is not a terminal, and says so", async () => {
    llm.enqueue(reply().tool("write_file", { file: "piped.txt", content: "x" }).stop());
    llm.enqueue(reply().text("understood").stop());
    const result = await run(process.execPath, [MAIN, "run", "write a file"]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain(`denied write_file`);
    expect(toolResult()).toBe(`Error: DENIED — ${NO_TERMINAL_REASON}`);
    expect(existsSync(ws.path("piped.txt"))).toBe(false);
  });

  it.skipIf(!existsSync(SCRIPT))("on a terminal, `y` runs the call and anything else denies it", async () => {
    llm.enqueue(reply().tool("write_file", { file: "yes.txt", content: "y" }).tool("write_file", { file: "no.txt", content: "n" }).stop());
    llm.enqueue(reply().text("one of two").stop());
    let answered = 0;
    const command = [process.execPath, MAIN, "run", "write two files"].map(shellQuote).join(" ");
    const result = await run(SCRIPT, ["-qec", command, "/dev/null"], (text, type) => {
      const asked = text.split("[y/N]").length - 1;
      if (asked > answered) {
        type(answered === 0 ? "y\r" : "nope\r");
        answered++;
      }
    });
    expect(result.code, result.output).toBe(0);
    expect(answered).toBe(2);
    expect(result.output).toMatch(/allow write_file \{"file":"yes\.txt","content":"y"\}\? \[y\/N\]/);
    expect(existsSync(ws.path("yes.txt"))).toBe(true);
    expect(existsSync(ws.path("no.txt"))).toBe(false);
    const results = (llm.completionRequests[1]!.body.messages as { role: string; content: string }[]).filter((m) => m.role === "tool").map((m) => m.content);
    expect(results[1]).toBe("Error: DENIED — denied at the terminal");
  });
});
