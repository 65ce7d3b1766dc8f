import type { BenchResult } from "./types.js";

/** `npm run bench`: runs every benchmark module (or those named on the command line) and prints the figures. */
const MODULES = ["startup", "serve-startup", "loop", "telemetry", "prompt-cache", "first-calls", "events", "fanout", "concurrency", "shell", "sandbox", "files", "tools", "memory-web", "agents", "compaction", "mcp", "store", "cluster", "schedules", "claude", "adversarial", "checkpoints", "keys"];

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const names = wanted.length ? MODULES.filter((m) => wanted.includes(m)) : MODULES;
  let failed = 0;
  for (const name of names) {
    let mod: { run(): Promise<BenchResult[]> };
    try {
      mod = (await import(`./${name}.js`)) as { run(): Promise<BenchResult[]> };
    } catch (error) {
      console.log(`\n== ${name}: not available (${(error as Error).message.split("\n")[0]})`);
      continue;
    }
    console.log(`\n== ${name}`);
    try {
      for (const r of await mod.run()) console.log(format(r));
    } catch (error) {
      failed++;
      console.log(`  FAILED: ${(error as Error).stack ?? String(error)}`);
    }
  }
  process.exitCode = failed ? 1 : 0;
}

function format(r: BenchResult): string {
  const value = `${round(r.value)} ${r.unit}`;
  const base = r.baseline ? `  | baseline ${r.baseline.name}: ${round(r.baseline.value)} ${r.unit}  ratio ${round(r.ratio ?? r.value / r.baseline.value)}×` : "";
  const target = r.target ? `  [target ${r.target}]` : "";
  const note = r.note ? `  (${r.note})` : "";
  return `  ${r.name}: ${value}${base}${target}${note}`;
}

function round(n: number): string {
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toFixed(3);
}

void main();
