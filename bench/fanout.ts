import { median, withBaseline, type BenchResult } from "./types.js";
import { createSession, percentile, startBenchServer, startLoadClient, startScriptedLlm, timedTurn, type BenchServer } from "./serve-harness.js";
import type { LoadReport } from "./load-client.js";

const TURNS = Number(process.env.VEIL_BENCH_FANOUT_TURNS ?? 48);
const WARMUP_TURNS = 3;
const READERS = Number(process.env.VEIL_BENCH_FANOUT_READERS ?? 300);
const PAUSED = 10;
/** Each turn: short tool calls, then a streamed answer (every delta is an event for every reader). */
const TOOL_STEPS = 2;
const TEXT_CHUNKS = 20;
/** The paused case sends ~180 KB of events per turn (3 bash outputs of 29 KB, each in tool.end and chat.message) so a reader that never reads falls far behind. */
const BIG_OUTPUT = "head -c 29000 /dev/zero | tr '\\0' x";
const PROBE_PAUSE_MS = 20;

interface Case {
  turnMs: number[];
  healthMs: number[];
  cpuSeconds: number;
  peakRssBytes: number;
  startRssBytes: number;
  report: LoadReport;
}

/** One fresh server: `readers` SSE clients on /events (in their own process), then TURNS timed turns while /health is probed. */
async function measure(options: { name: string; live: number; paused: number; bigOutput: boolean }): Promise<Case> {
  const llm = await startScriptedLlm({ toolSteps: options.bigOutput ? 6 : TOOL_STEPS, textChunks: TEXT_CHUNKS, bashCommand: options.bigOutput ? BIG_OUTPUT : undefined });
  let server: BenchServer | undefined;
  const clients = startLoadClient();
  const prober = startLoadClient();
  try {
    server = await startBenchServer({ llm, name: options.name, settings: { limits: { maxLiveSessions: 1000 } } });
    const sessionId = await createSession(server);
    for (let i = 0; i < WARMUP_TURNS; i++) await timedTurn(server, sessionId, `warm-up ${i}`);
    const target = { url: server.url, secret: server.secret, path: "/events" };
    if (options.live) await clients.send({ cmd: "readers", ...target, n: options.live, paused: false });
    if (options.paused) await clients.send({ cmd: "readers", ...target, n: options.paused, paused: true });
    await prober.send({ cmd: "probe", url: server.url, secret: server.secret, paths: ["/health"], pauseMs: PROBE_PAUSE_MS });
    const startRssBytes = server.rssBytes();
    let peakRssBytes = startRssBytes;
    const cpu0 = server.cpuSeconds();
    const turnMs: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      turnMs.push(await timedTurn(server, sessionId, `turn ${i}`));
      peakRssBytes = Math.max(peakRssBytes, server.rssBytes());
    }
    const cpuSeconds = server.cpuSeconds() - cpu0;
    const probes = await prober.stop();
    const report = await clients.stop();
    return { turnMs, healthMs: probes.probes["/health"] ?? [], cpuSeconds, peakRssBytes, startRssBytes, report };
  } finally {
    await server?.stop();
    await llm.close();
  }
}

const mb = (bytes: number) => bytes / (1024 * 1024);

/** Turn time, `/health` p99 and server CPU with 0 vs READERS SSE readers; then PAUSED readers that never read. */
export async function run(): Promise<BenchResult[]> {
  const none = await measure({ name: "fanout-0", live: 0, paused: 0, bigOutput: false });
  const many = await measure({ name: `fanout-${READERS}`, live: READERS, paused: 0, bigOutput: false });
  const bigNone = await measure({ name: "fanout-big-0", live: 1, paused: 0, bigOutput: true });
  const paused = await measure({ name: "fanout-paused", live: 1, paused: PAUSED, bigOutput: true });

  const liveBytes = many.report.readers.bytes;
  const pausedBytes = paused.report.readers.bytes.slice(1);
  const results: BenchResult[] = [
    withBaseline({
      name: `turn p50 with ${READERS} SSE readers on /events (${TOOL_STEPS} tool calls + ${TEXT_CHUNKS} text deltas per turn, ${TURNS} turns)`,
      value: median(many.turnMs),
      unit: "ms",
      baseline: { name: "no readers", value: median(none.turnMs) },
      target: "≤ 2×",
      note: `p99 ${percentile(many.turnMs, 99).toFixed(0)} ms vs ${percentile(none.turnMs, 99).toFixed(0)} ms; each reader got ${mb(Math.min(...liveBytes)).toFixed(2)}–${mb(Math.max(...liveBytes)).toFixed(2)} MB, ${many.report.readers.connected}/${READERS} connected`,
    }),
    withBaseline({
      name: `/health p99 during the turns with ${READERS} readers`,
      value: percentile(many.healthMs, 99),
      unit: "ms",
      baseline: { name: "no readers", value: percentile(none.healthMs, 99) },
      target: "≤ 100 ms",
      note: `${many.healthMs.length} probes, p50 ${median(many.healthMs).toFixed(1)} ms`,
    }),
    withBaseline({
      name: `server CPU for ${TURNS} turns with ${READERS} readers`,
      value: many.cpuSeconds,
      unit: "s",
      baseline: { name: "no readers", value: none.cpuSeconds },
    }),
    withBaseline({
      name: `turn p50 with ${PAUSED} paused SSE readers (never read; ~180 KB of events per turn)`,
      value: median(paused.turnMs),
      unit: "ms",
      baseline: { name: "no paused readers", value: median(bigNone.turnMs) },
      target: "≈ 1×",
    }),
    withBaseline({
      name: `server RSS growth over ${TURNS} turns with ${PAUSED} paused readers`,
      value: mb(paused.peakRssBytes - paused.startRssBytes),
      unit: "MB",
      baseline: { name: "no paused readers", value: mb(bigNone.peakRssBytes - bigNone.startRssBytes) },
      target: `bounded (≤ ${PAUSED} × 1 MB unread + socket buffers)`,
      note: `peak ${mb(paused.peakRssBytes).toFixed(0)} MB vs ${mb(bigNone.peakRssBytes).toFixed(0)} MB; a live reader got ${mb(paused.report.readers.bytes[0] ?? 0).toFixed(1)} MB, the paused ones ${mb(Math.max(...pausedBytes)).toFixed(2)} MB at most before being dropped (${paused.report.readers.ended}/${PAUSED} paused streams ended by the server)`,
    }),
  ];
  return results;
}
