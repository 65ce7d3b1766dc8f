import { median, withBaseline, type BenchResult } from "./types.js";
import { createSession, nowUs, percentile, startBenchServer, startLoadClient, startScriptedLlm, timedTurn } from "./serve-harness.js";

const SESSIONS = Number(process.env.VEIL_BENCH_SESSIONS ?? 200);
/** Each turn: short tool calls (bash, read_file, bash), then a short streamed answer. */
const TOOL_STEPS = Number(process.env.VEIL_BENCH_TOOL_STEPS ?? 3);
const TEXT_CHUNKS = 5;
const IDLE_PROBE_MS = 2000;
const PROBE_PAUSE_MS = 10;
/** What the scripted model's streamed deltas add up to. */
const ANSWER = Array.from({ length: TEXT_CHUNKS }, (_, i) => `word${i} `).join("");

/**
 * SESSIONS sessions each start one turn at the same moment on one `veil serve`, while another
 * process probes `/health` and `GET /sessions/:id`; baselines: the same probes with every
 * session idle, and one turn alone.
 */
export async function run(): Promise<BenchResult[]> {
  const llm = await startScriptedLlm({ toolSteps: TOOL_STEPS, textChunks: TEXT_CHUNKS });
  const server = await startBenchServer({ llm, name: "concurrency", settings: { limits: { maxLiveSessions: SESSIONS + 50 } } });
  let busyWindow: [number, number] = [0, 0];
  const results: BenchResult[] = [];
  try {
    const ids: string[] = [];
    for (let i = 0; i < SESSIONS; i++) ids.push(await createSession(server));
    const probePaths = [...ids.slice(0, 20).flatMap((id) => ["/health", `/sessions/${id}`]), "new:/health"];
    const probeKeys = ["/health", "/sessions/:id", "/health (new connection)"] as const;

    // One session's turns alone (its first turn starts its shell), then idle probes.
    const loneSession = await createSession(server);
    await timedTurn(server, loneSession, "warm-up");
    const lone: number[] = [];
    for (let i = 0; i < 5; i++) lone.push(await timedTurn(server, loneSession, `alone ${i}`));
    const idle = startLoadClient();
    await idle.send({ cmd: "probe", url: server.url, secret: server.secret, paths: probePaths, pauseMs: PROBE_PAUSE_MS });
    await new Promise((resolve) => setTimeout(resolve, IDLE_PROBE_MS));
    const idleProbes = (await idle.stop()).probes;

    // The turns' connections are open before they start, as a client's kept-alive pool is: a burst of
    // new connections is accepted one per event-loop turn (libuv), which the new-connection probe shows.
    await Promise.all(ids.map(async (id) => (await server.fetch(`/sessions/${id}`)).arrayBuffer()));
    const busy = startLoadClient();
    await busy.send({ cmd: "probe", url: server.url, secret: server.secret, paths: probePaths, pauseMs: PROBE_PAUSE_MS });
    const cpu0 = server.cpuSeconds();
    const wait0 = server.cpuWaitSeconds();
    const helper0 = server.helperCpuSeconds();
    const t0 = performance.now();
    const busyFrom = nowUs();
    // A failed turn is counted and shown, not the end of the run: how many were right is the figure.
    const settled = await Promise.allSettled(ids.map((id, i) => timedTurn(server, id, `go ${i}`, ANSWER)));
    const turns = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const turnErrors = settled.flatMap((s) => (s.status === "rejected" ? [(s.reason as Error).message] : []));
    busyWindow = [busyFrom, nowUs()];
    const wallMs = performance.now() - t0;
    const cpuSeconds = server.cpuSeconds() - cpu0;
    const waitSeconds = server.cpuWaitSeconds() - wait0;
    const helperSeconds = server.helperCpuSeconds() - helper0;
    const busyReport = await busy.stop();
    const busyProbes = busyReport.probes;

    const probeResult = (key: (typeof probeKeys)[number], name: string) =>
      withBaseline({
        name,
        value: percentile(busyProbes[key] ?? [], 99),
        unit: "ms",
        baseline: { name: "all sessions idle", value: percentile(idleProbes[key] ?? [], 99) },
        target: "≤ 100 ms",
        note: `${busyProbes[key]?.length ?? 0} probes, p50 ${median(busyProbes[key] ?? []).toFixed(1)} ms${busyReport.probeErrors[key]?.length ? `; ${failedNote(busyReport.probeErrors[key])}` : ""}`,
      });
    results.push(
      {
        name: `turns answered right of ${SESSIONS} at once`,
        value: turns.length,
        unit: "turns",
        target: `= ${SESSIONS}`,
        note: turnErrors.length ? failedNote(turnErrors) : "none failed",
      },
      probeResult("/health", `/health p99 while ${SESSIONS} sessions run a turn at once (${TOOL_STEPS} tool calls each)`),
      probeResult("/sessions/:id", `GET /sessions/:id p99 while ${SESSIONS} sessions run`),
      probeResult("/health (new connection)", `/health p99 on a new connection each time while ${SESSIONS} sessions run`),
      withBaseline({
        name: `slowest of ${SESSIONS} concurrent turns`,
        value: Math.max(...turns),
        unit: "ms",
        baseline: { name: "their median", value: median(turns) },
        target: "≤ 2×",
        note: `fastest ${Math.min(...turns).toFixed(0)} ms; all done in ${wallMs.toFixed(0)} ms, server CPU ${cpuSeconds.toFixed(2)} s (+ ${helperSeconds.toFixed(2)} s its spawn helper), its main thread waited ${waitSeconds.toFixed(2)} s for a CPU`,
      }),
      withBaseline({
        name: `median concurrent turn`,
        value: median(turns),
        unit: "ms",
        baseline: { name: "one turn alone", value: median(lone) },
        note: `${((wallMs / SESSIONS)).toFixed(1)} ms of wall time per turn`,
      }),
    );
  } finally {
    await server.stop();
    await llm.close();
  }
  const ticks = server.loopDelays(...busyWindow);
  if (ticks.length > 0) {
    const delays = ticks.map((t) => t.late);
    // What the server itself held the loop for: the lateness less the time it waited for a CPU.
    const own = ticks.map((t) => Math.max(0, t.late - t.waited));
    results.push({
      name: `server event-loop delay while the ${SESSIONS} turns run: p99`,
      value: percentile(delays, 99),
      unit: "ms",
      note: `p50 ${percentile(delays, 50).toFixed(1)} ms, max ${Math.max(...delays).toFixed(0)} ms, ${delays.filter((d) => d >= 50).length} of ${delays.length} 5-ms ticks ≥ 50 ms late; less the main thread's wait for a CPU: p99 ${percentile(own, 99).toFixed(1)} ms, max ${Math.max(...own).toFixed(0)} ms`,
    });
  }
  return results;
}

/** How many failed and their distinct errors, the first few. */
function failedNote(errors: string[]): string {
  const distinct = [...new Set(errors.map((e) => e.split("; stderr:")[0]!))].slice(0, 3);
  return `${errors.length} failed: ${distinct.join(" | ")}`;
}
