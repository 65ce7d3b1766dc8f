import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Where the secret came from: the --secret flag, VEIL_SECRET, the stored file, or generated now (and stored). */
export type SecretSource = "flag" | "env" | "file" | "generated";

/**
 * The server secret: --secret, else VEIL_SECRET, else the one stored in
 * .veil/secret, else a new one written there with mode 0600 (generated: true).
 */
export function resolveSecret(options: { flag?: string; env?: string; path: string }): { secret: string; generated: boolean; source: SecretSource } {
  if (options.flag) return { secret: options.flag, generated: false, source: "flag" };
  if (options.env) return { secret: options.env, generated: false, source: "env" };
  if (existsSync(options.path)) {
    const stored = readFileSync(options.path, "utf8").trim();
    if (stored) return { secret: stored, generated: false, source: "file" };
  }
  const secret = randomBytes(24).toString("base64url");
  mkdirSync(dirname(options.path), { recursive: true });
  writeFileSync(options.path, secret + "\n", { mode: 0o600 });
  chmodSync(options.path, 0o600);
  return { secret, generated: true, source: "generated" };
}
