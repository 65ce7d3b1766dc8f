import { readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import type { SandboxNetwork } from "../../../config/types.js";
import { PACKAGE_ROOT } from "../../../version.js";
import { realpathOrNull } from "../folders.js";

/**
 * The file system a sandbox sees, as bubblewrap mounts. The host's root is there read-only;
 * over it, each path gets the mount of the most specific rule that names it (a deeper path
 * is mounted after a shallower one), so a denied folder inside the workspace stays hidden
 * and a workspace inside a denied folder stays visible:
 * - the session's private folder is bound at /tmp, and at its own path (the shells'
 *   command files live there) — its `home` is the sandbox's $HOME;
 * - the workspace and each `files.writeRoots` folder are writable;
 * - in the workspace's `.veil`, the runtime's secrets are hidden (`secret`, `veil.db*`,
 *   `settings.json`, `keys*`) and its configuration is read-only (`agents`, `tools`,
 *   `models.json`), as for the file tools;
 * - `$VEIL_HOME`, every `readDeny` path and the host's container and session sockets are
 *   hidden: a folder shows up empty, a file empty;
 * - what Veil runs from (its package, the node binary) stays readable where it lies under the
 *   host's /tmp, which the private /tmp would otherwise cover: a custom tool's process starts
 *   from Veil's own child entry.
 */
export interface SandboxLayout {
  workspace: string;
  writeRoots: readonly string[];
  /** <workspace>/.veil */
  projectDir: string;
  /** $VEIL_HOME */
  veilHome: string;
  /** As configured; a leading ~ is the server user's home. */
  readDeny: readonly string[];
  network: SandboxNetwork;
  privateDir: PrivateDirPaths;
  /** Folders the sandbox must read although they lie under the host's /tmp (default: runtimeRoots()). */
  runtimeRoots?: readonly string[];
}

/** A session's private folder on the host, with what bubblewrap needs in it. */
export interface PrivateDirPaths {
  root: string;
  /** Bound at /tmp. */
  tmp: string;
  /** The sandbox's $HOME. */
  home: string;
  /** An empty read-only file bound over hidden files. */
  empty: string;
}

/** Sockets and folders of the host through which a process could act outside (container engines, the user's session bus and agents). */
const HOST_SOCKETS = ["/run/docker.sock", "/var/run/docker.sock", "/run/containerd", "/run/podman", "/run/user", "/run/snapd.socket"];

/** In `.veil`: what the sandbox never sees, and what it may read but not change. */
const HIDDEN_IN_PROJECT = /^(secret|veil\.db.*|settings\.json|keys.*)$/;
const READ_ONLY_IN_PROJECT = new Set(["agents", "tools", "models.json"]);

type Mount = { path: string; kind: "writable" | "read-only" | "hidden"; source?: string };

/** `~` and `~/x` are the server user's home; relative paths are taken from the workspace. */
export function expandPath(path: string, workspace: string, home = homedir()): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(workspace, path);
}


function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function depth(path: string): number {
  return path === sep ? 0 : path.split(sep).length - 1;
}

/** Whether `path` is `root` or inside it. */
function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Veil's package folder (the one holding its package.json) and the node binary's install folder. */
export function runtimeRoots(): string[] {
  return [...(PACKAGE_ROOT ? [PACKAGE_ROOT] : []), dirname(dirname(process.execPath))];
}

/** Every mount of the layout, shallowest first; for one path the last rule wins. */
export function layoutMounts(layout: SandboxLayout): Mount[] {
  const mounts = new Map<string, Mount>();
  const add = (path: string | null, kind: Mount["kind"], source?: string) => {
    if (path) mounts.set(path, { path, kind, ...(source ? { source } : {}) });
  };
  const writable = [layout.workspace, ...layout.writeRoots, layout.privateDir.root].map(realpathOrNull).filter((path): path is string => path !== null);
  for (const root of layout.runtimeRoots ?? runtimeRoots()) {
    const path = realpathOrNull(root);
    // Elsewhere the host's root, read-only, already shows it; inside a writable root it stays writable.
    if (path && within(path, "/tmp") && !writable.some((w) => within(path, w))) add(path, "read-only");
  }
  for (const root of writable) add(root, "writable");
  for (const path of [...HOST_SOCKETS, ...layout.readDeny.map((entry) => expandPath(entry, layout.workspace))]) add(realpathOrNull(path), "hidden");
  add(realpathOrNull(layout.veilHome), "hidden");
  const projectDir = realpathOrNull(layout.projectDir);
  if (projectDir && isDirectory(projectDir)) {
    for (const entry of safeList(projectDir)) {
      const path = join(projectDir, entry);
      // A link in .veil (say, settings.json → elsewhere) is hidden or made read-only where it points.
      if (HIDDEN_IN_PROJECT.test(entry)) add(realpathOrNull(path), "hidden");
      else if (READ_ONLY_IN_PROJECT.has(entry)) add(realpathOrNull(path), "read-only");
    }
  }
  return [...mounts.values()].sort((a, b) => depth(a.path) - depth(b.path));
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** bubblewrap's mount arguments for the layout (namespaces and the command come elsewhere). */
export function mountArgs(layout: SandboxLayout): string[] {
  const args = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--bind", layout.privateDir.tmp, "/tmp"];
  for (const mount of layoutMounts(layout)) {
    if (mount.kind === "writable") args.push("--bind", mount.path, mount.path);
    else if (mount.kind === "read-only") args.push("--ro-bind", mount.path, mount.path);
    else if (isDirectory(mount.path)) args.push("--tmpfs", mount.path, "--remount-ro", mount.path);
    else args.push("--ro-bind", layout.privateDir.empty, mount.path);
  }
  if (layout.network !== "full") args.push("--unshare-net");
  return args;
}
