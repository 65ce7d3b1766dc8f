/**
 * The spawn helper's process (see spawn-helper.ts): a small Node process that starts the
 * shells the server asks for and hands their stdio back over the IPC channel, so that the
 * big server process never forks. It holds nothing else; when the server goes (the channel
 * closes, or this process is re-parented), it SIGKILLs the process groups it started and exits.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import type { HelperMessage, HelperRequest } from "./spawn-helper.js";

const children = new Map<number, ChildProcess>();
const PARENT_CHECK_MS = 500;

function send(message: HelperMessage, handle?: Socket): void {
  if (process.connected) process.send!(message, handle);
}

/**
 * Until it is handed over, the helper must read nothing from a pipe: bytes read here would be
 * lost to the server (bash's start-up warnings on stderr). Node starts reading a child's pipe
 * as soon as it exists, and nothing in the public API stops it without a `data` listener.
 */
function stopReading(socket: Socket): void {
  const handle = (socket as unknown as { _handle?: { reading?: boolean; readStop?: () => number } })._handle;
  if (handle?.readStop) {
    handle.reading = false;
    handle.readStop();
  }
}

function start(request: HelperRequest): void {
  const { id } = request;
  let child: ChildProcess;
  try {
    child = spawn(request.file, request.args, { cwd: request.cwd, env: request.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
  } catch (error) {
    return send({ id, kind: "error", message: (error as Error).message, code: (error as NodeJS.ErrnoException).code });
  }
  child.once("error", (error: NodeJS.ErrnoException) => send({ id, kind: "error", message: error.message, code: error.code }));
  const pid = child.pid;
  if (pid === undefined) return; // the error event follows
  children.set(pid, child);
  const [stdin, stdout, stderr] = [child.stdin, child.stdout, child.stderr] as Socket[];
  stopReading(stdout!);
  stopReading(stderr!);
  send({ id, kind: "stdio", fd: 0, pid }, stdin);
  send({ id, kind: "stdio", fd: 1, pid }, stdout);
  send({ id, kind: "stdio", fd: 2, pid }, stderr);
  child.once("exit", (code, signal) => {
    children.delete(pid);
    send({ id, kind: "exit", code, signal });
  });
}

/** The server is gone: so are the shells it asked for. */
function shutdown(): never {
  for (const pid of children.keys()) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  process.exit(0);
}

process.on("message", (request: HelperRequest) => start(request));
process.on("disconnect", shutdown);
// A server killed while this process waited for its acks of sent pipes never gets a
// `disconnect` here (Node holds it back until the handle queue drains): being re-parented
// says the server is gone all the same.
const serverPid = process.ppid;
setInterval(() => {
  if (process.ppid !== serverPid) shutdown();
}, PARENT_CHECK_MS).unref();
