import { lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { sequentialIds } from "../src/base/ids.js";
import { memoryLogger } from "../src/base/log.js";
import { revertTurns } from "../src/core/checkpoints/revert.js";
import { TurnCheckpoints } from "../src/core/checkpoints/turn-checkpoints.js";
import { WorkspaceTracker } from "../src/core/checkpoints/workspace-tracker.js";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const FILES = 5_000;
const RUNS = 15;
const BIG_FILE_BYTES = 1024 * 1024;
const EDIT_TURNS = 100;
const REVERT_FILES = 100;

/** Checkpoint cost per turn on a 5,000-file workspace, store growth of 100 one-line edits of a 1 MB file, and a revert of 100 files. */
export async function run(): Promise<BenchResult[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-bench-cp-")));
  const ws = join(root, "ws");
  const store = SqliteStore.open(join(root, "bench.db"));
  const ids = sequentialIds();
  try {
    const paths = seed(ws);
    const tracker = new WorkspaceTracker(ws, join(root, "state"));
    await store.createSession({ id: "s", agent: "default", mode: "chat" });
    const turns = new TurnCheckpoints({ tracker, store, sessionId: "s", ids, log: memoryLogger() });
    let message = 0;
    const userTurn = async () => {
      const m = await store.appendMessage({ id: `m${++message}`, session_id: "s", role: "user", content: "go" });
      await turns.turnStarted(m.id);
    };
    const started = performance.now();
    await turns.ready();
    const baselineMs = performance.now() - started;
    await userTurn();

    const statOnly = timed(() => void paths.forEach((p) => lstatSync(join(ws, p))));
    const unchanged = await timedAsync(async () => void (await turns.settle()));
    const tenChanged = await timedAsync(
      async () => void (await turns.settle()),
      (run) => paths.slice(run * 10, run * 10 + 10).forEach((p) => writeFileSync(join(ws, p), `changed in run ${run}\n`)),
    );

    // 100 turns each editing one line of a 1 MB file.
    const big = join(ws, "big.txt");
    // Varied lines, like source text (a file of a few repeated lines offers no content-defined cut points).
    const words = "const let return value index result error config session store file path turn check if else for while await async".split(" ");
    let state = 12345;
    const pick = () => words[Math.floor((state = (state * 1103515245 + 12345) % 2147483648) / 65536) % words.length]!;
    const lines = Array.from({ length: BIG_FILE_BYTES / 64 }, (_, i) => `${i}: ${Array.from({ length: 8 }, pick).join(" ")};\n`);
    const original = lines.join("");
    writeFileSync(big, original);
    await userTurn();
    await turns.settle();
    const before = chunkBytes(store);
    for (let t = 0; t < EDIT_TURNS; t++) {
      await userTurn();
      lines[(t * 997) % lines.length] = `edited ${String(t).padStart(8, "0")} ${"y".repeat(42)}\n`;
      writeFileSync(big, lines.join(""));
      await turns.settle();
    }
    // The first edit stores the whole original once (the file's own copy); the rest is what the edits add.
    const growth = chunkBytes(store) - before - Buffer.byteLength(original);

    // A revert of one turn that changed 100 files.
    await userTurn();
    const revertFrom = `m${message}`;
    // The turn's own writes of the 100 files: what writing them costs on this disk at this moment.
    const writeStart = performance.now();
    for (let i = 0; i < REVERT_FILES; i++) writeFileSync(join(ws, paths[i + 500]!), `reverted later ${i}\n`);
    const writeMs = performance.now() - writeStart;
    await turns.settle();
    const revertStart = performance.now();
    const outcome = await revertTurns({ store, tracker, ids }, "s", revertFrom);
    const revertMs = performance.now() - revertStart;
    if (outcome.files.length !== REVERT_FILES) throw new Error(`the revert touched ${outcome.files.length} files, not ${REVERT_FILES}`);
    if (readFileSync(join(ws, paths[500]!), "utf8").startsWith("reverted later")) throw new Error("the revert did not put the file back");

    return [
      withBaseline({ name: `checkpoint cost per turn, ${FILES} files, nothing changed`, value: unchanged, unit: "ms", baseline: { name: `lstatSync of the ${FILES} files`, value: statOnly }, target: "≤ 3 ms" }),
      withBaseline({ name: `checkpoint cost per turn, ${FILES} files, 10 changed (scan, mirror, chunks, stored)`, value: tenChanged, unit: "ms", baseline: { name: "nothing changed", value: unchanged }, target: "≤ 15 ms" }),
      { name: `first turn in a new workspace (${FILES} files mirrored once)`, value: baselineMs, unit: "ms" },
      { name: `store growth, ${EDIT_TURNS} turns editing one line of a 1 MB file`, value: growth / 1024, unit: "KiB", note: `${(growth / 1024 / 1024).toFixed(2)} MB beyond the file's first copy`, target: "≤ 2 MB" },
      withBaseline({ name: `revert of ${REVERT_FILES} files`, value: revertMs, unit: "ms", baseline: { name: `writeFileSync of the ${REVERT_FILES} files by the turn`, value: writeMs }, target: "≤ 200 ms" }),
    ];
  } finally {
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** 5,000 small files in 50 folders of two levels. */
function seed(ws: string): string[] {
  const paths: string[] = [];
  for (let d = 0; d < 50; d++) {
    for (let f = 0; f < FILES / 50; f++) {
      const path = `src/d${d}/${f % 2 ? "sub/" : ""}f${f}.ts`;
      mkdirSync(dirname(join(ws, path)), { recursive: true });
      writeFileSync(join(ws, path), `export const v${f} = ${"1".repeat(f % 40)};\n`);
      paths.push(path);
    }
  }
  return paths;
}

function chunkBytes(store: SqliteStore): number {
  return (store.connection.prepare("SELECT COALESCE(SUM(length(data)), 0) AS n FROM chunks").get() as { n: number }).n;
}

function timed(body: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    body();
    times.push(performance.now() - t);
  }
  return median(times);
}

async function timedAsync(body: () => Promise<void>, before?: (run: number) => void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    before?.(i);
    const t = performance.now();
    await body();
    times.push(performance.now() - t);
  }
  return median(times);
}
