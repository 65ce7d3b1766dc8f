import { tmpdir } from "node:os";
import { createRuntime } from "../runtime.js";
import { cleanLeftovers } from "../tools/shared/leftovers.js";
import { sandboxStatus } from "../tools/shared/sandbox/session.js";
import { resolveSecret } from "../server/secret.js";
import { startServer } from "../server/listen.js";
import type { ServeCommand } from "./args.js";
import { nextSteps, nextStepsText } from "./next-steps.js";
import { modelWarning } from "./preflight.js";
import { cliLogger, logFormatOf, type CliIo } from "./terminal.js";

/** `veil serve`: prints `listening on http://HOST:PORT` when ready; SIGINT/SIGTERM shut down cleanly. */
export async function serveCommand(command: ServeCommand, io: CliIo): Promise<number> {
  const runtime = await createRuntime({ workspace: command.workspace, env: io.env, log: cliLogger(io, command.logFormat, "info") });
  // A stray rejection in one session's background work must not take every session down.
  process.on("unhandledRejection", (reason) => {
    runtime.log.error("unhandled rejection (server kept running)", { error: String(reason), stack: (reason as Error)?.stack });
  });
  const { secret, generated, source } = resolveSecret({ flag: command.secret, env: io.env.VEIL_SECRET, path: runtime.config.paths.secretPath });
  const server = await startServer({ runtime, secret, host: command.host, port: command.port }).catch(async (error: unknown) => {
    // Nothing was served: close the store and the runtime's processes before the error is printed.
    await runtime.close();
    throw error;
  });
  // Sessions can still be created without a model; chat cannot, so say so before the first one.
  const warning = modelWarning(runtime.config);
  if (warning) runtime.log.warn(`chat will fail until a model is configured: ${warning}`);
  if (generated) io.stderr(`generated a server secret (stored in ${runtime.config.paths.secretPath}, mode 0600): ${secret}\n`);
  io.stdout(`listening on ${server.url}\n`);
  // Probed once the port answers, off the event loop: a machine without a sandbox says so now,
  // and /health and the first shell or custom tool wait for this probe if it still runs.
  void sandboxStatus({ runtime: runtime.resources, settings: runtime.config.settings, log: runtime.log });
  // A first start says where to go from here: people read text, programs get one log entry.
  const steps = nextSteps({ url: server.url, config: runtime.config, secretSource: source });
  if (logFormatOf(io, command.logFormat) === "text") io.stderr(nextStepsText(steps));
  else runtime.log.info("what to do next", { ...steps });
  // In the background: a big workspace must not delay the start.
  void cleanLeftovers({ workspace: runtime.config.paths.workspace, tmpDir: tmpdir() }).then(({ files, dirs }) => {
    if (files.length + dirs.length > 0) runtime.log.info("removed leftovers of dead servers", { files, dirs });
  });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      runtime.log.info(`received ${signal}, shutting down`);
      // A second signal while shutting down exits at once.
      process.once(signal as NodeJS.Signals, () => process.exit(130));
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      void server.close().then(resolve, (error) => {
        io.stderr(`shutdown error: ${String(error)}\n`);
        resolve();
      });
    };
    const onInt = () => stop("SIGINT");
    const onTerm = () => stop("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
  });
  return 0;
}
