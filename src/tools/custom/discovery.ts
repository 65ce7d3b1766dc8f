import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { BrokenToolFolder } from "../registry.js";
import { fileStamp, listFolders, statOrNull } from "../shared/folders.js";
import type { Logger } from "../types.js";
import { parseManifest, remoteTimeoutWarning, type ToolManifest } from "./manifest.js";

export type ToolScope = "agent" | "project" | "global";

/** A folder that holds a usable tool. */
export interface ToolFolder {
  scope: ToolScope;
  folder: string;
  indexPath: string;
  /** Changes when tool.json or index.js changes on disk. */
  version: string;
  manifest: ToolManifest;
}

export type { BrokenToolFolder };

type Entry<T> = { key: string; ok: true; folder: ToolFolder; value: T } | { key: string; ok: false; broken: BrokenToolFolder };

export interface ScanResult<T> {
  /** By tool name, higher tiers first (agent > project > global). */
  tools: Map<string, { folder: ToolFolder; value: T }>;
  broken: BrokenToolFolder[];
}

/**
 * Scans tool folders and keeps what it parsed, keyed by the (mtime, size) of
 * tool.json and index.js: an unchanged folder costs two stat calls, a changed
 * one is re-read, a broken one is logged once per change.
 */
export class ToolFolderScanner<T> {
  private readonly cache = new Map<string, Entry<T>>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly options: {
      log: Logger;
      checkSchema: (schema: Record<string, unknown>) => string | null;
      /** Builds what callers keep per good folder (the RegisteredTool); called once per change. */
      build: (folder: ToolFolder) => T;
    },
  ) {}

  /** `roots` in priority order; the first tier defining a name wins. */
  scan(roots: ReadonlyArray<{ scope: ToolScope; dir: string }>): ScanResult<T> {
    const tools = new Map<string, { folder: ToolFolder; value: T }>();
    const broken: BrokenToolFolder[] = [];
    for (const root of roots) {
      const seen = new Set<string>();
      for (const folderPath of listFolders(root.dir)) {
        seen.add(folderPath);
        const entry = this.load(root.scope, folderPath);
        if (!entry.ok) {
          broken.push(entry.broken);
          continue;
        }
        const name = entry.folder.manifest.name;
        const existing = tools.get(name);
        if (!existing) {
          tools.set(name, { folder: entry.folder, value: entry.value });
        } else if (existing.folder.scope === root.scope) {
          this.warnOnce(`dup:${folderPath}:${entry.key}`, `custom tool "${name}" is defined twice in the ${root.scope} tools folder; using ${existing.folder.folder}, ignoring ${folderPath}`);
        }
      }
      this.prune(root.dir, seen);
    }
    return { tools, broken };
  }

  private load(scope: ToolScope, folderPath: string): Entry<T> {
    const manifestPath = join(folderPath, "tool.json");
    const indexPath = join(folderPath, "index.js");
    const manifestStat = statOrNull(manifestPath);
    const indexStat = statOrNull(indexPath);
    const key = `${scope}|${fileStamp(manifestStat)}|${fileStamp(indexStat)}`;
    const cached = this.cache.get(folderPath);
    if (cached && cached.key === key) return cached;

    const fail = (file: string, reason: string): Entry<T> => {
      const entry: Entry<T> = { key, ok: false, broken: { scope, folder: folderPath, file, reason } };
      this.options.log.warn(`custom tool skipped: ${file}: ${reason}`, { folder: folderPath, scope });
      this.cache.set(folderPath, entry);
      return entry;
    };
    if (!manifestStat?.isFile()) return fail(manifestPath, "tool.json is missing");
    if (!indexStat?.isFile()) return fail(indexPath, "index.js is missing (it must export `module.exports = async function execute(input)`)");
    let text: string;
    let source: string;
    try {
      text = readFileSync(manifestPath, "utf8");
      source = readFileSync(indexPath, "utf8");
    } catch (error) {
      return fail(manifestPath, `could not be read (${(error as Error).message})`);
    }
    const parsed = parseManifest(text, this.options.checkSchema);
    if (!parsed.ok) return fail(manifestPath, parsed.reason);
    const warning = remoteTimeoutWarning(source, parsed.manifest.timeoutSeconds);
    if (warning) this.options.log.warn(`custom tool "${parsed.manifest.name}" ${warning}`, { folder: folderPath, file: manifestPath });
    const folder: ToolFolder = { scope, folder: folderPath, indexPath, version: key, manifest: parsed.manifest };
    let value: T;
    try {
      value = this.options.build(folder);
    } catch (error) {
      return fail(manifestPath, (error as Error).message);
    }
    const entry: Entry<T> = { key, ok: true, folder, value };
    this.cache.set(folderPath, entry);
    return entry;
  }

  /** Forgets folders that vanished from a scanned root. */
  private prune(dir: string, seen: Set<string>): void {
    const prefix = dir.endsWith("/") ? dir : `${dir}/`;
    for (const path of this.cache.keys()) {
      if (path.startsWith(prefix) && !path.slice(prefix.length).includes("/") && !seen.has(path)) this.cache.delete(path);
    }
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.options.log.warn(message);
  }
}
