import { createLogger, jsonLogFormat, textLogFormat, type LogLevel, type Logger } from "../base/log.js";
import type { LogFormat } from "./args.js";

/** What a command may touch of its process: passed in, so commands run in tests without one. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  stdoutIsTTY?: boolean;
  stderrIsTTY?: boolean;
  stdinIsTTY?: boolean;
  /** The whole of stdin (for `veil run -` and piped prompts). */
  readStdin?: () => Promise<string>;
  /** Calls `handler` on each Ctrl-C (SIGINT) until the returned function is called. */
  onInterrupt?: (handler: () => void) => () => void;
  /** Ends the process at once with this code. */
  exit?: (code: number) => void;
  /** Asks one question on the terminal and resolves with the line typed (approvals of `veil run`). */
  ask?: (question: string) => Promise<string>;
}

export interface Paint {
  dim(text: string): string;
  bold(text: string): string;
  cyan(text: string): string;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
}

const sgr = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;
const plain = (text: string) => text;
const COLOURS: Paint = { dim: sgr(2, 22), bold: sgr(1, 22), cyan: sgr(36, 39), green: sgr(32, 39), red: sgr(31, 39), yellow: sgr(33, 39) };
const NO_COLOURS: Paint = { dim: plain, bold: plain, cyan: plain, green: plain, red: plain, yellow: plain };

/**
 * Colour only for a terminal: never when NO_COLOR is set (no-color.org), always when
 * FORCE_COLOR is set to anything but 0, else when the stream is a TTY.
 */
export function useColour(env: CliIo["env"], isTTY: boolean | undefined): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" ) return env.FORCE_COLOR !== "0";
  return Boolean(isTTY);
}

export function paintFor(env: CliIo["env"], isTTY: boolean | undefined): Paint {
  return useColour(env, isTTY) ? COLOURS : NO_COLOURS;
}

/** The log format in force: --log-format, else text on a terminal, JSON otherwise. */
export function logFormatOf(io: CliIo, format: LogFormat | undefined): LogFormat {
  return format ?? (io.stderrIsTTY ? "text" : "json");
}

/** The CLI's logger: short text lines on a terminal, JSON lines otherwise (or as --log-format says). */
export function cliLogger(io: CliIo, format: LogFormat | undefined, defaultLevel: LogLevel): Logger {
  const chosen = logFormatOf(io, format);
  const level = (["debug", "info", "warn", "error"].includes(io.env.VEIL_LOG_LEVEL ?? "") ? io.env.VEIL_LOG_LEVEL : defaultLevel) as LogLevel;
  return createLogger({ level, format: chosen === "text" ? textLogFormat : jsonLogFormat, write: (line) => io.stderr(line + "\n") });
}
