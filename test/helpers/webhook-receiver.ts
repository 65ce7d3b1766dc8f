/**
 * A webhook receiver on 127.0.0.1 for the outbound webhook tests: it checks each POST's
 * X-Veil-Signature against its own secret (HMAC-SHA256 of the raw body, as a real receiver
 * would), records every request, and answers with the status `answer` picks (default 204).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface ReceivedHook {
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
  /** Whether X-Veil-Signature is the HMAC of the raw body with the receiver's secret. */
  signed: boolean;
  /** Date.now() on arrival. */
  time: number;
  /** 1 for the first request carrying this X-Veil-Delivery, 2 for its retry, … */
  attempt: number;
  status: number;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedHook[];
  /** Resolves once `n` requests have arrived. */
  waitFor(n: number): Promise<ReceivedHook[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(options: { secret: string; port?: number; answer?: (hook: Omit<ReceivedHook, "status">) => number }): Promise<WebhookReceiver> {
  const received: ReceivedHook[] = [];
  const waiters: { n: number; resolve: (hooks: ReceivedHook[]) => void }[] = [];
  const attempts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const header = String(req.headers["x-veil-signature"] ?? "");
      const expected = `sha256=${createHmac("sha256", options.secret).update(raw).digest("hex")}`;
      const signed = header.length === expected.length && timingSafeEqual(Buffer.from(header), Buffer.from(expected));
      const delivery = String(req.headers["x-veil-delivery"] ?? "");
      const attempt = (attempts.get(delivery) ?? 0) + 1;
      attempts.set(delivery, attempt);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        body = undefined;
      }
      const hook = { headers: req.headers, raw: raw.toString("utf8"), body, signed, time: Date.now(), attempt };
      const status = signed ? (options.answer?.(hook) ?? 204) : 401;
      received.push({ ...hook, status });
      res.writeHead(status).end();
      for (const waiter of [...waiters]) {
        if (received.length >= waiter.n) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(received.slice(0, waiter.n));
        }
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    waitFor: (n) => (received.length >= n ? Promise.resolve(received.slice(0, n)) : new Promise((resolve) => waiters.push({ n, resolve }))),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
