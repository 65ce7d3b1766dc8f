import { createHmac, timingSafeEqual } from "node:crypto";

/** The header both directions carry: `sha256=<hex HMAC-SHA256 of the raw body>`. */
export const SIGNATURE_HEADER = "x-veil-signature";
/** The sender's id of one delivery: the same id twice is one delivery. */
export const DELIVERY_HEADER = "x-veil-delivery";

/** `sha256=<hex>` of `body` with `secret`. */
export function signBody(secret: string, body: string | Uint8Array): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** Whether `header` is the signature of `body` with `secret`; compared in constant time. */
export function signatureMatches(header: string | undefined, secret: string, body: Uint8Array): boolean {
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header?.trim() ?? "");
  if (!match) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  return timingSafeEqual(Buffer.from(match[1]!, "hex"), expected);
}
