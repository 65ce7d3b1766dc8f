import { expect } from "vitest";
import { ERROR_STATUS, type ErrorCode } from "../../src/errors.js";

export interface ErrorAnswer {
  code: string;
  message: string;
  details?: { providerStatus?: number } & Record<string, unknown>;
}

/**
 * The `{ error }` of an HTTP answer, checked to carry this code with this status, and that the
 * status is the one src/errors.ts gives the code (one status per code).
 */
export async function errorOf(res: Response, code: ErrorCode, status: number): Promise<ErrorAnswer> {
  const body = (await res.json()) as { error: ErrorAnswer };
  expect({ status: res.status, code: body.error.code }).toEqual({ status, code });
  expect(ERROR_STATUS[code]).toBe(status);
  return body.error;
}
