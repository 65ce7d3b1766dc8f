import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * How long a kept-alive connection may sit idle between two requests. Node advertises it in
 * `Keep-Alive: timeout=5` (clients close before that) and closes the socket a second later.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/**
 * Closes an idle kept-alive connection only once the event loop has read what already waits
 * on it. Node's own handling destroys the socket from the timer the moment it fires; after the
 * loop was busy for longer than the timeout, the timers run before the loop reads the sockets,
 * so a connection whose next request already sits unread in the kernel was destroyed with it
 * (the kernel answers unread data with a reset: the client sees ECONNRESET on a request the
 * server had received). Here the decision waits one turn of the loop: if a request was read in
 * that turn, Node has already taken the keep-alive timer off the socket, and it stays open.
 */
export function closeIdleConnectionsAfterReading(server: Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // With a listener on the server's `timeout`, Node leaves the socket to it instead of destroying it.
  server.on("timeout", (socket: Socket) => {
    const read = socket.bytesRead;
    setImmediate(() => {
      // Bytes read since are the next request (or its start): Node has re-armed the socket's timers for it.
      if (!socket.destroyed && socket.bytesRead === read) socket.destroy();
    });
  });
}
