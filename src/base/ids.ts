import { randomFillSync, randomUUID } from "node:crypto";

/** Id source. Pass one in so tests can get stable ids. */
export interface IdGenerator {
  /** A new id with a readable prefix, e.g. `sess_…`, `msg_…`, `call_…`. */
  next(prefix: string): string;
}

/** 9 random bytes: 12 base64url characters, 72 bits. */
const ID_BYTES = 9;
/**
 * Random bytes are drawn from the CSPRNG 512 ids at a time: one randomBytes call per id cost
 * about 6 µs (a native call and a new Buffer each), several per step of a run.
 */
const pool = Buffer.allocUnsafe(ID_BYTES * 512);
let offset = pool.length;

export const randomIds: IdGenerator = {
  next(prefix) {
    if (offset + ID_BYTES > pool.length) {
      randomFillSync(pool);
      offset = 0;
    }
    const id = pool.toString("base64url", offset, offset + ID_BYTES);
    offset += ID_BYTES;
    return `${prefix}_${id}`;
  },
};

export function uuid(): string {
  return randomUUID();
}

export function sequentialIds(): IdGenerator {
  let n = 0;
  return { next: (prefix) => `${prefix}_${String(++n).padStart(6, "0")}` };
}
