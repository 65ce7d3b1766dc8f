/**
 * JSON Schema builders with static types, the subset of TypeBox's `Type` API that
 * Veil uses. Why not TypeBox itself: its 266-file ESM build took about 200 ms to
 * import, most of `veil run`'s 300 ms start budget. The values are plain JSON
 * Schema (validated by AJV), and `Static<typeof S>` gives the input type.
 */

declare const STATIC: unique symbol;
declare const OPTIONAL: unique symbol;

/** A JSON Schema object carrying its static type (type-level only). */
export interface TSchema<T = unknown> {
  readonly [STATIC]?: T;
  readonly [key: string]: unknown;
}

type TOptional<S extends TSchema> = S & { readonly [OPTIONAL]: true };

export type Static<S> = S extends TSchema<infer T> ? T : never;

type Props = Record<string, TSchema>;
type OptionalKeys<P extends Props> = { [K in keyof P]: P[K] extends { readonly [OPTIONAL]: true } ? K : never }[keyof P];
type RequiredKeys<P extends Props> = Exclude<keyof P, OptionalKeys<P>>;
type Flatten<T> = { [K in keyof T]: T[K] };
type ObjectStatic<P extends Props> = Flatten<{ [K in RequiredKeys<P>]: Static<P[K]> } & { [K in OptionalKeys<P>]?: Static<P[K]> }>;

type Options = Record<string, unknown>;
type UnionStatic<S extends readonly TSchema[]> = { [I in keyof S]: Static<S[I]> }[number];

/** Optional properties are remembered here; JSON Schema marks them by leaving them out of `required`. */
const optionalSchemas = new WeakSet<object>();

export const Type = {
  String: (options: Options = {}): TSchema<string> => ({ ...options, type: "string" }),
  Number: (options: Options = {}): TSchema<number> => ({ ...options, type: "number" }),
  Integer: (options: Options = {}): TSchema<number> => ({ ...options, type: "integer" }),
  Boolean: (options: Options = {}): TSchema<boolean> => ({ ...options, type: "boolean" }),
  Null: (options: Options = {}): TSchema<null> => ({ ...options, type: "null" }),
  Unknown: (options: Options = {}): TSchema<unknown> => ({ ...options }),
  Literal: <const V extends string | number | boolean>(value: V, options: Options = {}): TSchema<V> => ({
    ...options,
    const: value,
    type: typeof value === "string" ? "string" : typeof value === "number" ? "number" : "boolean",
  }),
  Array: <S extends TSchema>(items: S, options: Options = {}): TSchema<Static<S>[]> => ({ ...options, type: "array", items }),
  Union: <const S extends readonly TSchema[]>(schemas: S, options: Options = {}): TSchema<UnionStatic<S>> => ({ ...options, anyOf: [...schemas] }),
  Record: <V extends TSchema>(_key: TSchema<string>, value: V, options: Options = {}): TSchema<Record<string, Static<V>>> => ({
    ...options,
    type: "object",
    additionalProperties: value,
  }),
  /** A raw JSON Schema with a declared static type. */
  Unsafe: <T>(schema: Options = {}): TSchema<T> => ({ ...schema }),
  Optional: <S extends TSchema>(schema: S): TOptional<S> => {
    const copy = { ...schema } as TOptional<S>;
    optionalSchemas.add(copy);
    return copy;
  },
  Object: <P extends Props>(properties: P, options: Options = {}): TSchema<ObjectStatic<P>> => {
    const required = Object.keys(properties).filter((key) => !optionalSchemas.has(properties[key] as object));
    return { ...options, type: "object", properties, ...(required.length ? { required } : {}) };
  },
};
