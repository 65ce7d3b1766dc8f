/**
 * A sandbox's network forwarder (see forward.ts): `node forwarder-main.js <socket> <port>`
 * beside a shell, or a worker thread of a custom-tool process (its own event loop, so a
 * tool that blocks its main thread with execSync still reaches the proxy). It says
 * "ready" once it listens (the shell or tool waits for that), then serves until the
 * sandbox ends.
 */
import { isMainThread, parentPort } from "node:worker_threads";
import { startForwarder } from "./forward.js";

const [socketPath, port] = process.argv.slice(2);
startForwarder(socketPath!, Number(port)).then(
  () => (isMainThread ? process.stdout.write("ready\n") : parentPort!.postMessage("ready")),
  (error: Error) => {
    process.stderr.write(`veil sandbox forwarder: ${error.message}\n`);
    process.exit(1);
  },
);
