import { randomBytes, randomUUID } from "node:crypto";

/** Id source. Pass one in so tests can get stable ids. */
export interface IdGenerator {
  /** A new id with a readable prefix, e.g. `sess_…`, `msg_…`, `call_…`. */
  next(prefix: string): string;
}

export const randomIds: IdGenerator = {
  next(prefix) {
    return `${prefix}_${randomBytes(9).toString("base64url")}`;
  },
};

export function uuid(): string {
  return randomUUID();
}

export function sequentialIds(): IdGenerator {
  let n = 0;
  return { next: (prefix) => `${prefix}_${String(++n).padStart(6, "0")}` };
}
