import { StringDecoder } from "node:string_decoder";
import type { Clock } from "../../../base/clock.js";
import { MAX_OUTPUT_CHARS, truncationFooter } from "../truncate.js";
import { utf16Length } from "../text-view.js";

/** How long live output is coalesced before one `tool.chunk` goes out. */
export const CHUNK_INTERVAL_MS = 50;
/** A pending chunk this large is sent at once, without waiting for the interval. */
export const CHUNK_FLUSH_CHARS = 8_192;

export interface CapturedOutput {
  /** The first `max` chars (all of them when not truncated). */
  head: string;
  /** Every char the command printed, kept or not. */
  totalChars: number;
  totalBytes: number;
  truncated: boolean;
}

/**
 * Keeps the first `max` chars of a byte stream and only counts the rest, so a command
 * printing a gigabyte costs a few hundred KB. Optionally streams the kept part live,
 * coalesced (see ChunkThrottle), and says once when live streaming stops at the cap.
 */
export class OutputCapture {
  private readonly decoder = new StringDecoder("utf8");
  private head = "";
  private full = false;
  private overflowChars = 0;
  private bytes = 0;

  constructor(
    private readonly max = MAX_OUTPUT_CHARS,
    private readonly live?: ChunkThrottle,
  ) {}

  push(data: Uint8Array): void {
    if (data.length === 0) return;
    this.bytes += data.length;
    if (this.full) {
      this.overflowChars += utf16Length(data);
      return;
    }
    const text = this.decoder.write(data as Buffer);
    const room = this.max - this.head.length;
    if (text.length <= room) {
      this.head += text;
      this.live?.write(text);
      return;
    }
    this.head += text.slice(0, room);
    this.overflowChars += text.length - room;
    this.full = true;
    this.live?.write(text.slice(0, room));
    this.live?.stop(`\n[live output stopped at ${this.max} chars; the rest is counted, not streamed]\n`);
  }

  get totalBytes(): number {
    return this.bytes;
  }

  /** Flushes the decoder and the live stream; the capture can still be read after. */
  finish(): CapturedOutput {
    if (!this.full) {
      const tail = this.decoder.end();
      if (tail) {
        const room = this.max - this.head.length;
        this.head += tail.slice(0, room);
        this.overflowChars += Math.max(0, tail.length - room);
        this.live?.write(tail.slice(0, room));
      }
    }
    this.live?.flush();
    return {
      head: this.head,
      totalChars: this.head.length + this.overflowChars,
      totalBytes: this.bytes,
      truncated: this.overflowChars > 0,
    };
  }
}

/**
 * Renders a capture for the model: trailing newlines trimmed, then the shared
 * truncation footer when chars were dropped.
 */
export function renderCaptured(captured: CapturedOutput, max = MAX_OUTPUT_CHARS): string {
  if (captured.truncated) return `${captured.head.slice(0, max)}${truncationFooter(max, captured.totalChars)}`;
  return captured.head.replace(/[\r\n]+$/, "");
}

/**
 * Coalesces live output into few `tool.chunk` events: at most one per interval, or
 * sooner when a large piece is pending. After stop() nothing more is emitted except
 * the one stop notice, so a flood of output cannot flood the event bus.
 */
export class ChunkThrottle {
  private pending = "";
  private cancelTimer?: () => void;
  private stopped = false;

  constructor(
    private readonly emit: (chunk: string) => void,
    private readonly clock: Pick<Clock, "setTimer">,
    private readonly intervalMs = CHUNK_INTERVAL_MS,
  ) {}

  write(text: string): void {
    if (this.stopped || text.length === 0) return;
    this.pending += text;
    if (this.pending.length >= CHUNK_FLUSH_CHARS) this.flush();
    else this.cancelTimer ??= this.clock.setTimer(this.intervalMs, () => this.flush());
  }

  /** Sends what is pending plus `notice`, then ignores further writes. */
  stop(notice: string): void {
    if (this.stopped) return;
    this.pending += notice;
    this.flush();
    this.stopped = true;
  }

  flush(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (this.pending.length === 0) return;
    const chunk = this.pending;
    this.pending = "";
    this.emit(chunk);
  }
}
