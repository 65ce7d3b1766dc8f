import type { ProviderTimeouts } from "../../config/defaults.js";

export type SilencePhase = "first byte" | "between chunks";

/**
 * Aborts a request whose provider is silent too long: `firstByteMs` from sending it to the
 * first byte of the response body (headers alone do not count: some servers send them only
 * with the first token), then `idleMs` between chunks.
 */
export class SilenceTimer {
  private timer: NodeJS.Timeout | undefined;
  /** The phase whose limit ran out, once it has. */
  expired: SilencePhase | null = null;

  constructor(
    private readonly limits: ProviderTimeouts,
    private readonly onExpire: () => void,
  ) {}

  /** At the send. */
  startFirstByte(): void {
    this.arm("first byte", this.limits.firstByteMs);
  }

  /** Before reading each chunk after the first. */
  startNextChunk(): void {
    this.arm("between chunks", this.limits.idleMs);
  }

  /** While the consumer handles a chunk: its time is not the provider's. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The limit of a phase, ms. */
  limit(phase: SilencePhase): number {
    return phase === "first byte" ? this.limits.firstByteMs : this.limits.idleMs;
  }

  private arm(phase: SilencePhase, ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.expired = phase;
      this.onExpire();
    }, ms);
  }
}

/**
 * A response body's chunks, read under the timer: the first under the first-byte limit the
 * send started (still running), each next one under the idle limit.
 */
export async function* timedChunks(body: AsyncIterable<Uint8Array>, timer: SilenceTimer): AsyncGenerator<Uint8Array> {
  const chunks = body[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (let first = true; ; first = false) {
      if (!first) timer.startNextChunk();
      const next = await chunks.next();
      timer.stop();
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    timer.stop();
    // Stopped early (the stream's [DONE], an error): let go of the connection.
    if (!finished) await chunks.return?.().catch(() => undefined);
  }
}

/** The whole body as text, read under the timer like a stream. */
export async function timedText(body: AsyncIterable<Uint8Array>, timer: SilenceTimer): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of timedChunks(body, timer)) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}
