import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../src/base/clock.js";
import { memoryLogger } from "../src/base/log.js";
import { EventLog } from "../src/core/event-log.js";
import { InProcessEventBus } from "../src/core/memory-bus.js";
import { sseResponse } from "../src/server/sse.js";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const BATCHES = 100;
const PER_BATCH = 10;
const REPLAY = 10_000;

/** The durable event log: cost per stored event, and a 10,000-event replay to one SSE client. */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "veil-bench-events-"));
  const store = SqliteStore.open(join(dir, "veil.db"));
  const bus = new InProcessEventBus();
  const log = new EventLog({ store, bus, clock: systemClock, log: memoryLogger() });
  try {
    const body = { type: "tool.end", toolName: "bash", toolCallId: "call_1", toolInput: { command: "ls" }, output: "a\nb\nc", outputPreview: "a b c", success: true, durationMs: 3, details: null } as const;
    // Warm up prepared statements and the session's seq lookup.
    await log.publish("sess_warm", body);
    const perEvent: number[] = [];
    const rawPerEvent: number[] = [];
    for (let b = 0; b < BATCHES; b++) {
      const t0 = performance.now();
      // Events of one step are published back to back, as the recorder does.
      for (let i = 0; i < PER_BATCH - 1; i++) void log.publish("sess_bench", body);
      await log.publish("sess_bench", body);
      perEvent.push((performance.now() - t0) / PER_BATCH);
      const t1 = performance.now();
      for (let i = 0; i < PER_BATCH; i++) await store.appendMessage({ id: `m_${b}_${i}`, session_id: "sess_raw", role: "user", content: JSON.stringify(body) }).catch(() => undefined);
      rawPerEvent.push((performance.now() - t1) / PER_BATCH);
    }

    const many = Array.from({ length: REPLAY }, (_, i) => ({ session_id: "sess_replay", seq: i + 1, type: "tool.end", ts: Date.now(), data: JSON.stringify({ ...body, type: undefined }) }));
    for (let i = 0; i < many.length; i += 1000) await store.appendEvents(many.slice(i, i + 1000));
    const t2 = performance.now();
    await store.listEvents("sess_replay", { after: 0, limit: REPLAY });
    const listMs = performance.now() - t2;
    const controller = new AbortController();
    const t3 = performance.now();
    const res = sseResponse({ bus, log, filter: { sessionId: "sess_replay" }, idField: "seq", signal: controller.signal, lastEventId: 0 });
    const reader = res.body!.getReader();
    let frames = 0;
    while (frames < REPLAY) {
      const { value, done } = await reader.read();
      if (done) break;
      for (let i = 0; i < value.length - 1; i++) if (value[i] === 10 && value[i + 1] === 10) frames++;
    }
    const replayMs = performance.now() - t3;
    controller.abort();
    return [
      withBaseline({
        name: "event-log publish per event (stored, then delivered; 10 per tick as one step)",
        value: median(perEvent) * 1000,
        unit: "µs",
        baseline: { name: "one appendMessage of the same JSON", value: median(rawPerEvent) * 1000 },
        target: "≤ 50 µs median",
      }),
      withBaseline({
        name: `replay of ${REPLAY} stored events to one SSE client`,
        value: replayMs,
        unit: "ms",
        baseline: { name: "reading the same rows from the store", value: listMs },
        target: "≤ 100 ms",
        note: `${frames} frames`,
      }),
    ];
  } finally {
    await log.flush();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
