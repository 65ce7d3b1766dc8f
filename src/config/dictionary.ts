/**
 * Records keyed by user text (agent, mode, provider and model names, env names) are
 * built without a prototype, so `constructor`, `__proto__` or `toString` are plain
 * missing keys there rather than Object.prototype's members.
 */

/** The same data with every plain object rebuilt prototype-free (arrays and scalars kept). */
export function withoutPrototypes<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutPrototypes) as T;
  if (!isPlainObject(value)) return value;
  const out = Object.create(null) as Record<string, unknown>;
  for (const [key, child] of Object.entries(value)) out[key] = withoutPrototypes(child);
  return out as T;
}

/** `record[key]` when the record itself holds that key (never an inherited member). */
export function ownEntry<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
