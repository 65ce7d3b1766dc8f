import { parseSentinel, sentinelMarkers } from "./bash-script.js";

export interface SentinelResult {
  exitCode: number;
  syntaxError: boolean;
  cwd: string;
}

/**
 * Splits the shell's output stream into "command output" and the end-of-command
 * sentinel. Output is handed on as it arrives, except for a trailing piece that is a
 * prefix of the marker (held back until the next chunk decides), so live output is not
 * delayed. Memory stays
 * bounded by one chunk plus the marker length, whatever the command prints.
 */
export class SentinelScanner {
  private readonly start: Buffer;
  private readonly end: Buffer;
  private held: Buffer = Buffer.alloc(0);
  private payload: Buffer | null = null;
  private result: SentinelResult | null = null;

  constructor(
    token: string,
    private readonly onOutput: (data: Buffer) => void,
  ) {
    const markers = sentinelMarkers(token);
    this.start = Buffer.from(markers.start);
    this.end = Buffer.from(markers.end);
  }

  get done(): SentinelResult | null {
    return this.result;
  }

  /** Feeds a chunk; returns the sentinel once it is complete. Bytes after it are dropped. */
  push(chunk: Buffer): SentinelResult | null {
    if (this.result) return this.result;
    if (this.payload) return this.pushPayload(chunk);
    const data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const at = data.indexOf(this.start);
    if (at >= 0) {
      if (at > 0) this.onOutput(data.subarray(0, at));
      this.held = Buffer.alloc(0);
      this.payload = Buffer.alloc(0);
      return this.pushPayload(data.subarray(at + this.start.length));
    }
    const keep = this.partialMarkerLength(data);
    if (data.length > keep) this.onOutput(data.subarray(0, data.length - keep));
    this.held = Buffer.from(data.subarray(data.length - keep));
    return null;
  }

  /** Length of the longest suffix of `data` that is a proper prefix of the start marker. */
  private partialMarkerLength(data: Buffer): number {
    const first = this.start[0]!;
    const from = Math.max(0, data.length - (this.start.length - 1));
    for (let i = from; i < data.length; i++) {
      if (data[i] !== first) continue;
      const suffix = data.subarray(i);
      if (this.start.subarray(0, suffix.length).equals(suffix)) return suffix.length;
    }
    return 0;
  }

  /** What was held back, for when the stream ends without a sentinel. */
  drain(): void {
    if (this.held.length > 0) this.onOutput(this.held);
    this.held = Buffer.alloc(0);
  }

  private pushPayload(chunk: Buffer): SentinelResult | null {
    const payload = Buffer.concat([this.payload!, chunk]);
    const at = payload.indexOf(this.end);
    if (at < 0) {
      this.payload = payload;
      return null;
    }
    this.result = parseSentinel(payload.subarray(0, at).toString("utf8"));
    this.payload = null;
    return this.result;
  }
}
