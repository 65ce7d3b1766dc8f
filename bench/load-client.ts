/**
 * The client side of the server benchmarks (fanout, concurrency), run as its own process
 * (bench/serve-harness.ts forks it) so that its CPU never delays the process that drives the
 * turns and its latency figures are not the driver's event loop.
 *
 * Commands over IPC:
 *  - `readers`: N SSE connections to one path; `paused` ones read their headers and then
 *    nothing more (a client that stopped reading). Answers `ready` once all are connected.
 *  - `probe`: GET each path in turn, one request in flight, a pause between, over one kept-alive
 *    connection (a path written `new:/health` opens a new connection each time); keeps the latencies.
 *  - `stop`: ends everything and answers with what was seen.
 */
import { Agent, request, type IncomingMessage, type ClientRequest } from "node:http";

export type LoadCommand =
  | { cmd: "readers"; url: string; secret: string; path: string; n: number; paused: boolean }
  | { cmd: "probe"; url: string; secret: string; paths: string[]; pauseMs: number }
  | { cmd: "stop" };

export interface LoadReport {
  readers: { connected: number; bytes: number[]; frames: number[]; ended: number };
  probes: Record<string, number[]>;
  /** Probes that got no 200 answer (a reset connection, an error status), by probe key: their errors. */
  probeErrors: Record<string, string[]>;
}

interface Reader {
  req: ClientRequest;
  res?: IncomingMessage;
  bytes: number;
  frames: number;
  ended: boolean;
}

const readers: Reader[] = [];
const probes: Record<string, number[]> = {};
const probeErrors: Record<string, string[]> = {};
let probing = false;
let probeLoop: Promise<void> = Promise.resolve();

function send(message: unknown): void {
  process.send?.(message);
}

function openReader(url: string, secret: string, path: string, paused: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const reader: Reader = { req: undefined as unknown as ClientRequest, bytes: 0, frames: 0, ended: false };
    reader.req = request(`${url}${path}`, { headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" }, agent: false }, (res) => {
      reader.res = res;
      if (res.statusCode !== 200) return reject(new Error(`SSE ${path}: HTTP ${res.statusCode}`));
      res.once("end", () => (reader.ended = true));
      res.once("close", () => (reader.ended = true));
      if (paused) {
        res.pause();
        return resolve();
      }
      res.on("data", (chunk: Buffer) => {
        reader.bytes += chunk.length;
        for (let i = chunk.indexOf(10); i !== -1 && i < chunk.length - 1; i = chunk.indexOf(10, i + 1)) if (chunk[i + 1] === 10) reader.frames++;
      });
      resolve();
    });
    reader.req.on("error", (error) => (reader.res ? (reader.ended = true) : reject(error)));
    reader.req.end();
    readers.push(reader);
  });
}

/** One connection for the probes, as a monitor or a UI keeps it. */
const keptAlive = new Agent({ keepAlive: true, maxSockets: 1 });

async function get(url: string, secret: string, path: string, fresh: boolean): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    let connected = 0;
    let headers = 0;
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${secret}` }, agent: fresh ? false : keptAlive }, (res) => {
      headers = performance.now();
      res.once("end", () => {
        if (process.env.VEIL_BENCH_DEBUG && performance.now() - t0 > 500) console.error(`${(Date.now() - (performance.now() - t0)) % 100000} slow ${path}: connect ${(connected - t0).toFixed(0)} headers ${(headers - t0).toFixed(0)} end ${(performance.now() - t0).toFixed(0)}`);
      });
      res.resume();
      res.once("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET ${path}: HTTP ${res.statusCode}`))));
      // A connection reset mid-answer ends the response without an "end".
      res.once("error", reject);
      res.once("close", () => (res.complete ? undefined : reject(new Error(`GET ${path}: connection closed mid-answer`))));
    });
    req.on("error", reject);
    if (fresh) req.on("socket", (socket) => socket.once("connect", () => (connected = performance.now())));
    req.end();
  });
  return performance.now() - t0;
}

async function probe(url: string, secret: string, paths: string[], pauseMs: number): Promise<void> {
  for (let i = 0; probing; i++) {
    const entry = paths[i % paths.length]!;
    const fresh = entry.startsWith("new:");
    const path = fresh ? entry.slice(4) : entry;
    const key = `${path.replace(/\/sess_[^/]+/, "/:id")}${fresh ? " (new connection)" : ""}`;
    // A failed probe is a figure too (the server dropped it), never the end of this process.
    await get(url, secret, path, fresh).then(
      (ms) => (probes[key] ??= []).push(ms),
      (error: Error) => (probeErrors[key] ??= []).push(`${error.message}${(error as NodeJS.ErrnoException).code ? ` (${(error as NodeJS.ErrnoException).code})` : ""}`),
    );
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

/** Paused readers are read out at the end, to count what the server still sent them before it dropped them. */
async function drainPaused(): Promise<void> {
  await Promise.all(
    readers.map(
      (r) =>
        new Promise<void>((resolve) => {
          if (!r.res || !r.res.isPaused()) return resolve();
          r.res.on("data", (chunk: Buffer) => (r.bytes += chunk.length));
          r.res.once("end", resolve);
          r.res.once("close", resolve);
          r.res.resume();
          setTimeout(resolve, 500);
        }),
    ),
  );
}

process.on("message", (message: LoadCommand) => {
  void (async () => {
    try {
      if (message.cmd === "readers") {
        await Promise.all(Array.from({ length: message.n }, () => openReader(message.url, message.secret, message.path, message.paused)));
        send({ ready: true });
      } else if (message.cmd === "probe") {
        probing = true;
        probeLoop = probe(message.url, message.secret, message.paths, message.pauseMs);
        send({ ready: true });
      } else if (message.cmd === "stop") {
        probing = false;
        await probeLoop;
        await drainPaused();
        const report: LoadReport = {
          readers: { connected: readers.filter((r) => r.res).length, bytes: readers.map((r) => r.bytes), frames: readers.map((r) => r.frames), ended: readers.filter((r) => r.ended).length },
          probes,
          probeErrors,
        };
        for (const r of readers) r.req.destroy();
        keptAlive.destroy();
        send(report);
        process.disconnect?.();
      }
    } catch (error) {
      send({ error: (error as Error).stack ?? String(error) });
    }
  })();
});
