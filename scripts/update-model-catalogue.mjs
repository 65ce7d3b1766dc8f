// Refreshes the built-in model catalogue (src/llm/catalogue-data.ts) from a saved copy of
// OpenRouter's public model list. Run by hand when models or prices change; nothing in the
// install, build, tests or runtime touches the network for this.
//
//   curl -s https://openrouter.ai/api/v1/models > /tmp/openrouter-models.json
//   node scripts/update-model-catalogue.mjs /tmp/openrouter-models.json          # lists what differs
//   node scripts/update-model-catalogue.mjs --write /tmp/openrouter-models.json  # and rewrites the entries
//
// Per entry (matched by its OpenRouter `id`): context_length → context_window,
// top_provider.max_completion_tokens → max_output_tokens, architecture.input_modalities
// (text, image, audio) → input_modalities, and, for entries that carry a price (one vendor,
// one price), pricing.prompt / completion / input_cache_read / input_cache_write (USD per
// token) → cost in USD per million. Entries OpenRouter does not list are reported and kept.
// Check what it reports against the vendor's page (each entry's `source`) before committing,
// then set CATALOGUE_REVIEWED to the day.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const BEGIN = "/* catalogue:begin */";
const END = "/* catalogue:end */";
const MODALITIES = ["text", "image", "audio"];

/** The entries between the markers of a catalogue-data.ts text. */
export function readEntries(text) {
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`update-model-catalogue: no ${BEGIN} … ${END} block`);
  return JSON.parse(text.slice(start + BEGIN.length, end));
}

/** The text with the block replaced: one entry per line, a blank line between vendors. */
export function writeEntries(text, entries) {
  const lines = [];
  let vendor;
  for (const entry of entries) {
    const next = entry.id.split("/")[0];
    if (vendor !== undefined && next !== vendor) lines.push("");
    vendor = next;
    lines.push(`  ${inline(entry)},`);
  }
  const body = `\n[\n${lines.join("\n").replace(/,$/, "")}\n]\n`;
  return text.slice(0, text.indexOf(BEGIN) + BEGIN.length) + body + text.slice(text.indexOf(END));
}

/** JSON on one line, spaced as the file is written: { "a": 1, "b": ["x", "y"] }. */
function inline(value) {
  if (Array.isArray(value)) return `[${value.map(inline).join(", ")}]`;
  if (value && typeof value === "object") return `{ ${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`).join(", ")} }`;
  return JSON.stringify(value);
}

const perMillion = (perToken) => {
  const n = Number(perToken);
  return Number.isFinite(n) && n > 0 ? Number((n * 1e6).toPrecision(6)) : undefined;
};

/** Each entry as OpenRouter lists it now, and the fields that changed. */
export function refresh(entries, openrouter) {
  const byId = new Map(openrouter.data.map((model) => [model.id, model]));
  const changes = [];
  const missing = [];
  const updated = entries.map((entry) => {
    const model = byId.get(entry.id);
    if (!model) {
      missing.push(entry.id);
      return entry;
    }
    const next = { ...entry };
    if (Number.isInteger(model.context_length) && model.context_length > 0) next.context_window = model.context_length;
    const maxOut = model.top_provider?.max_completion_tokens;
    if (Number.isInteger(maxOut) && maxOut > 0) next.max_output_tokens = maxOut;
    const modalities = MODALITIES.filter((m) => model.architecture?.input_modalities?.includes(m));
    if (modalities.includes("text")) next.input_modalities = modalities;
    if (entry.cost && model.pricing) {
      const cost = { input: perMillion(model.pricing.prompt), output: perMillion(model.pricing.completion), cache_read: perMillion(model.pricing.input_cache_read), cache_write: perMillion(model.pricing.input_cache_write) };
      if (cost.input !== undefined && cost.output !== undefined) next.cost = Object.fromEntries(Object.entries(cost).filter(([, v]) => v !== undefined));
    }
    for (const field of ["context_window", "max_output_tokens", "input_modalities", "cost"]) {
      const before = JSON.stringify(entry[field]);
      const after = JSON.stringify(next[field]);
      if (before !== after) changes.push(`${entry.id}: ${field} ${before ?? "(none)"} → ${after}`);
    }
    return next;
  });
  return { entries: updated, changes, missing };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const write = args.includes("--write");
  const at = args.indexOf("--catalogue");
  const catalogue = at >= 0 ? args[at + 1] : fileURLToPath(new URL("../src/llm/catalogue-data.ts", import.meta.url));
  const source = args.filter((arg, i) => !arg.startsWith("--") && (at < 0 || i !== at + 1))[0];
  if (!source) {
    process.stderr.write("usage: node scripts/update-model-catalogue.mjs [--write] [--catalogue FILE] OPENROUTER_MODELS_JSON\n");
    process.exit(64);
  }
  const text = readFileSync(catalogue, "utf8");
  const { entries, changes, missing } = refresh(readEntries(text), JSON.parse(readFileSync(source, "utf8")));
  for (const line of changes) process.stdout.write(`${line}\n`);
  for (const id of missing) process.stdout.write(`${id}: not in OpenRouter's list (kept as it is)\n`);
  if (changes.length === 0) process.stdout.write("no changes\n");
  if (write && changes.length > 0) {
    writeFileSync(catalogue, writeEntries(text, entries));
    process.stdout.write(`wrote ${catalogue}\n`);
  }
}
