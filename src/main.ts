#!/usr/bin/env node
import { parseCommand, UsageError } from "./cli/args.js";
import type { CliIo } from "./cli/terminal.js";
import { isVeilError } from "./errors.js";

/** Handed in by the bin's loader (src/cli/boot.ts); absent when this file runs unbundled. */
declare const __veilCodeCache: { keep(): void } | undefined;

/** A command that does real work asks for V8's code cache to be written at exit; help and usage errors write nothing. */
function keepCodeCache(): void {
  if (typeof __veilCodeCache !== "undefined") __veilCodeCache.keep();
}

const io: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  env: process.env,
  // Getters: touching process.stdin sets up a stream, which `veil run "prompt"` never needs.
  get stdoutIsTTY() {
    return process.stdout.isTTY;
  },
  get stderrIsTTY() {
    return process.stderr.isTTY;
  },
  get stdinIsTTY() {
    return process.stdin.isTTY;
  },
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  },
  onInterrupt: (handler) => {
    process.on("SIGINT", handler);
    return () => void process.off("SIGINT", handler);
  },
  exit: (code) => process.exit(code),
  ask: async (question) => {
    const { createInterface } = await import("node:readline/promises");
    const lines = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    try {
      return await lines.question(question);
    } finally {
      lines.close();
    }
  },
};

// `veil tools | head`: a reader that goes away is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

async function main(): Promise<number> {
  if (process.argv[2] === "mcp") {
    keepCodeCache();
    return (await import("./cli/mcp.js")).mcpCommand(process.argv.slice(3), process.cwd(), io);
  }
  const command = parseCommand(process.argv.slice(2), process.cwd());
  if (command.kind !== "help" && command.kind !== "version") keepCodeCache();
  switch (command.kind) {
    case "help":
      io.stdout(command.text);
      return 0;
    case "version": {
      const { VERSION } = await import("./version.js");
      io.stdout(`${VERSION}\n`);
      return 0;
    }
    case "serve":
      return (await import("./cli/serve.js")).serveCommand(command, io);
    case "run": {
      const code = await (await import("./cli/run.js")).runOnce(command, io);
      // The run closed everything it opened (its store, shells, sockets): once stdout and
      // stderr are written out, ending here spares the wait for Node to tear its heap down,
      // a good part of the time between the last answer and the exit.
      await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
      process.exit(code);
    }
    case "agents":
      return (await import("./cli/listings.js")).agentsCommand(command, io);
    case "tools":
      return (await import("./cli/listings.js")).toolsCommand(command, io);
    case "skills":
      return (await import("./cli/listings.js")).skillsCommand(command, io);
    case "sessions":
      return (await import("./cli/sessions.js")).sessionsCommand(command, io);
    case "sessions close":
      return (await import("./cli/sessions.js")).sessionsCloseCommand(command, io);
    case "sessions prune":
      return (await import("./cli/sessions.js")).sessionsPruneCommand(command, io);
    case "schedules":
      return (await import("./cli/schedules.js")).schedulesCommand(command, io);
    case "keys":
      return (await import("./cli/keys.js")).keysCommand(command, io);
  }
}

/** Resolves once everything written to `stream` so far has been handed to the system (or the stream failed). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) return resolve();
    stream.write("", () => resolve());
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // Usage errors: one line naming the mistake, then the usage; typed errors: `CODE: message`.
    if (error instanceof UsageError) io.stderr(`${error.problem}\n\n${error.usage}`);
    else if (isVeilError(error)) io.stderr(`${error.code}: ${error.message}\n`);
    else io.stderr(`error: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = error instanceof UsageError ? 64 : 1;
  },
);
