import type { RegisteredTool } from "../types.js";
import { bash } from "./bash.js";
import { bashOutput } from "./bash-output.js";
import { editFile } from "./edit-file.js";
import { glob } from "./glob.js";
import { grep } from "./grep.js";
import { killShell } from "./kill-shell.js";
import { listDir } from "./list-dir.js";
import { logWrite } from "./log-write.js";
import { memoryRead } from "./memory-read.js";
import { memorySearch } from "./memory-search.js";
import { memoryWrite } from "./memory-write.js";
import { readFile } from "./read-file.js";
import { scheduleWakeup } from "./schedule-wakeup.js";
import { sleep } from "./sleep.js";
import { todoRead } from "./todo-read.js";
import { todoWrite } from "./todo-write.js";
import { toolActivate } from "./tool-activate.js";
import { toolSearch } from "./tool-search.js";
import { webFetch } from "./web-fetch.js";
import { webSearch } from "./web-search.js";
import { writeFile } from "./write-file.js";

/**
 * The built-in tools (tier 1) in their documented order (the README's table). The three multi-agent tools drive
 * sessions, so they live in core/agents and come in through `agentTools`; the full set of 24
 * is core/builtins.ts `allBuiltinTools()`.
 */
export function builtinTools(agentTools: readonly RegisteredTool[] = []): RegisteredTool[] {
  return [
    bash,
    bashOutput,
    killShell,
    readFile,
    writeFile,
    editFile,
    listDir,
    glob,
    grep,
    webSearch,
    webFetch,
    memoryRead,
    memoryWrite,
    memorySearch,
    todoWrite,
    todoRead,
    ...agentTools,
    logWrite,
    sleep,
    scheduleWakeup,
    toolSearch,
    toolActivate,
  ];
}
