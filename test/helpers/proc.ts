import { readdirSync, readFileSync } from "node:fs";

/** One process as /proc/<pid>/stat tells it. */
export interface ProcEntry {
  pid: number;
  comm: string;
  /** R, S, D, Z, … (Z: a zombie, which nobody may reap in a container whose PID 1 reaps nothing). */
  state: string;
  ppid: number;
  pgrp: number;
}

/** Every process of the host that can still be read. */
export function processes(): ProcEntry[] {
  const out: ProcEntry[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(")");
    const [state = "", ppid, pgrp] = stat.slice(close + 2).split(" ");
    out.push({ pid: Number(entry), comm: stat.slice(stat.indexOf("(") + 1, close), state, ppid: Number(ppid), pgrp: Number(pgrp) });
  }
  return out;
}
