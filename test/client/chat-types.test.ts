/**
 * The typed client's chat<T>: `structured` has the caller's type. Checked by the TypeScript
 * compiler on snippets that use it (right use compiles, a wrong field is an error), since
 * vitest itself does not type-check.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const CLIENT = join(process.cwd(), "src/client/index.js");
const SCHEMA = `{ type: "object", properties: { city: { type: "string" } } }`;

const SNIPPETS = {
  typed: `const reply = await veil.chat<{ city: string }>("s", "m", { output_schema: ${SCHEMA} });\nconst city: string | undefined = reply.structured?.city;\nvoid city;`,
  wrongUse: `const reply = await veil.chat<{ city: string }>("s", "m", { output_schema: ${SCHEMA} });\nconst n: number | undefined = reply.structured?.city;\nvoid reply.structured?.town;\nvoid n;`,
  untyped: `const reply = await veil.chat("s", "m");\nvoid reply.structured.city;`,
};

/** Each snippet's compiler errors, from one program holding them all. */
function diagnostics(): Record<keyof typeof SNIPPETS, string> {
  const dir = mkdtempSync(join(tmpdir(), "veil-client-types-"));
  try {
    const files = Object.entries(SNIPPETS).map(([name, body]) => {
      const file = join(dir, `${name}.ts`);
      writeFileSync(file, `import { VeilClient } from ${JSON.stringify(CLIENT)};\nexport async function use(veil: VeilClient): Promise<void> {\n${body}\n}\n`);
      return [name, file] as const;
    });
    const options = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ["lib.es2023.d.ts", "lib.dom.d.ts"], skipLibCheck: true, types: [] };
    const program = ts.createProgram(files.map(([, file]) => file), options);
    const all = ts.getPreEmitDiagnostics(program);
    return Object.fromEntries(files.map(([name, file]) => [name, all.filter((d) => d.file?.fileName === file).map((d) => ts.flattenDiagnosticMessageText(d.messageText, " ")).join("\n")])) as Record<keyof typeof SNIPPETS, string>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("VeilClient.chat<T> types structured", () => {
  it("structured is T | undefined: its fields have T's types, others are errors; without T it is unknown", () => {
    const errors = diagnostics();
    expect(errors.typed).toBe("");
    expect(errors.wrongUse).toMatch(/Type 'string \| undefined' is not assignable to type 'number \| undefined'/);
    expect(errors.wrongUse).toMatch(/Property 'town' does not exist/);
    expect(errors.untyped).toMatch(/'reply.structured' is of type 'unknown'/);
  });
});
