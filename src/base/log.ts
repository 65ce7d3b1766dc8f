/** Structured log sink, passed in (never a global). */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LogEntry {
  level: LogLevel;
  time: string;
  msg: string;
  [field: string]: unknown;
}

/** How one entry becomes one line: JSON for machines, short text for people at a terminal. */
export type LogFormatter = (entry: LogEntry) => string;

export const jsonLogFormat: LogFormatter = (entry) => JSON.stringify(entry);

/** Longest rendering of one field value in text logs; stacks and big payloads stay in JSON logs. */
const TEXT_FIELD_MAX = 200;

/**
 * `12:04:05 WARN message key=value …`: the time of day, the level, the message and the
 * fields, each value cut at 200 characters (stacks are left out; use `--log-format json`).
 */
export const textLogFormat: LogFormatter = ({ level, time, msg, ...fields }) => {
  const clock = time.slice(11, 19);
  const parts = Object.entries(fields)
    .filter(([key, value]) => key !== "stack" && value !== undefined)
    .map(([key, value]) => {
      const text = typeof value === "string" ? (/[\s"=]/.test(value) ? JSON.stringify(value) : value) : JSON.stringify(value);
      return `${key}=${text.length > TEXT_FIELD_MAX ? `${text.slice(0, TEXT_FIELD_MAX)}…` : text}`;
    });
  return [clock, level.toUpperCase().padEnd(5), msg, ...parts].join(" ");
};

/** Line-per-entry logs (JSON unless another formatter is given) to a writable (stderr by default). */
export function createLogger(
  options: { level?: LogLevel; write?: (line: string) => void; bindings?: Record<string, unknown>; format?: LogFormatter } = {},
): Logger {
  const min = ORDER[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const format = options.format ?? jsonLogFormat;
  const log = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    write(format({ level, time: new Date().toISOString(), msg: message, ...options.bindings, ...fields }));
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

/** Collects entries in memory; for tests and for `veil run` quiet mode. */
export function memoryLogger(): Logger & { entries: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] } {
  const entries: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] = [];
  const log = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => void entries.push({ level, message, fields });
  return { entries, debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}
