/**
 * One server event stream, kept open: `POST /stream-tokens` mints a 60-second token
 * (the secret never goes into a URL), `new EventSource(path?token=…&lastEventId=N)`
 * opens it. On any error the stream is closed and reopened with a fresh token after a
 * short backoff, resuming after the last event id it saw, so a network drop or a
 * server restart heals by itself.
 */
import { ApiError, type Api } from "./api.js";

export type StreamState = "connecting" | "live" | "reconnecting" | "paused";

export interface StreamOptions {
  api: Api;
  path: "/events" | "/remote-methods";
  /** More query parameters of the stream's URL. */
  query?: Record<string, string>;
  onEvent(event: ServerEvent): void;
  onState(state: StreamState): void;
  /** After the stream (re)opened; `resumed` is false only for the first open. */
  onOpen?(resumed: boolean): void;
}

/** An event as the server sends it: flat JSON with type and sessionId. */
export interface ServerEvent {
  type: string;
  sessionId?: string;
  seq?: number;
  gseq?: number;
  [field: string]: unknown;
}

const BACKOFF_MS = [200, 500, 1000, 2000, 4000];

export class LiveStream {
  private source: EventSource | null = null;
  private lastEventId: string | null = null;
  private attempts = 0;
  private opened = false;
  private stopped = false;
  private timer: number | undefined;

  constructor(private readonly options: StreamOptions) {}

  start(): void {
    this.stopped = false;
    void this.connect();
    window.addEventListener("online", this.retryNow);
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
    window.removeEventListener("online", this.retryNow);
    this.source?.close();
    this.source = null;
  }

  /**
   * Lets go of the connection (a background tab): browsers allow six connections per
   * host over HTTP/1.1, and every open stream holds one. resume() picks up after the
   * last event id, like a reconnect.
   */
  pause(): void {
    if (this.stopped) return;
    this.stop();
    this.options.onState("paused");
  }

  resume(): void {
    if (!this.stopped) return;
    this.start();
  }

  private readonly retryNow = () => {
    if (this.source || this.stopped) return;
    window.clearTimeout(this.timer);
    void this.connect();
  };

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.options.onState(this.opened ? "reconnecting" : "connecting");
    let token: string;
    try {
      token = (await this.options.api.post<{ token: string }>("/stream-tokens", { path: this.options.path })).token;
    } catch (error) {
      // 401 means the secret is no longer valid: the api hook has already sent the user to the login form.
      if (error instanceof ApiError && error.status === 401) return this.stop();
      return this.scheduleRetry();
    }
    if (this.stopped) return;
    const query = new URLSearchParams({ ...this.options.query, token });
    if (this.lastEventId) query.set("lastEventId", this.lastEventId);
    const source = new EventSource(`${this.options.path}?${query}`);
    this.source = source;
    source.onopen = () => {
      this.attempts = 0;
      const resumed = this.opened;
      this.opened = true;
      this.options.onState("live");
      this.options.onOpen?.(resumed);
    };
    source.onmessage = (message: MessageEvent<string>) => {
      if (message.lastEventId) this.lastEventId = message.lastEventId;
      let event: ServerEvent;
      try {
        event = JSON.parse(message.data) as ServerEvent;
      } catch {
        return;
      }
      this.options.onEvent(event);
    };
    source.onerror = () => {
      // EventSource would retry with the same (soon expired) token; take over instead.
      source.close();
      if (this.source === source) this.source = null;
      this.scheduleRetry();
    };
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    this.options.onState("reconnecting");
    const delay = BACKOFF_MS[Math.min(this.attempts++, BACKOFF_MS.length - 1)]!;
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.connect(), delay);
  }
}
