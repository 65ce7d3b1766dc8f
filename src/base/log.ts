/** Structured log sink, passed in (never a global). */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Line-per-entry JSON logs to a writable (stderr by default). */
export function createLogger(options: { level?: LogLevel; write?: (line: string) => void; bindings?: Record<string, unknown> } = {}): Logger {
  const min = ORDER[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const log = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    write(JSON.stringify({ level, time: new Date().toISOString(), msg: message, ...options.bindings, ...fields }));
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

/** Collects entries in memory; for tests and for `veil run` quiet mode. */
export function memoryLogger(): Logger & { entries: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] } {
  const entries: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] = [];
  const log = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => void entries.push({ level, message, fields });
  return { entries, debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}
