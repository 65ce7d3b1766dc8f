import { VeilError } from "../../errors.js";
import { SqliteError } from "./driver.js";

/** Turns constraint failures into catalogue errors; everything else passes through. */
export function mapSqliteError(error: unknown, what: string, sessionId?: string): unknown {
  if (!(error instanceof SqliteError)) return error;
  if (error.code === "SQLITE_CONSTRAINT_FOREIGNKEY") {
    return new VeilError("SESSION_NOT_FOUND", `Session not found${sessionId ? `: ${sessionId}` : ""} (${what})`, {
      cause: error,
    });
  }
  if (error.code === "SQLITE_CONSTRAINT_PRIMARYKEY" || error.code === "SQLITE_CONSTRAINT_UNIQUE") {
    return new VeilError("CONFLICT", `Already exists: ${what}`, { cause: error });
  }
  return error;
}
