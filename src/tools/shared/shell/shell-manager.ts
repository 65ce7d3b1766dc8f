import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../../base/clock.js";
import type { Disposable } from "../../types.js";
import { shellDirPrefix } from "../leftovers.js";
import { BackgroundShell, backgroundShellId } from "./background-shell.js";
import { snapshotCommand } from "./bash-script.js";
import { PROCESS_GROUP, type Isolation } from "./isolation.js";
import { PersistentShell, type RunOptions, type RunResult } from "./persistent-shell.js";
import { gatedStart } from "./start-gate.js";
import { sandboxedLaunch, type ShellLaunch } from "./launch.js";
import type { Sandbox } from "../sandbox/sandbox.js";

/** Isolation of a sandboxed session: bubblewrap's argv comes per shell from its launch. */
const SANDBOXED: Isolation = { mode: "sandbox", prefix: [] };

/** Session resource key (`ctx.session.get(SHELLS_KEY, …)`). */
export const SHELLS_KEY = "bash.shells";
/** How long the foreground shell may take to write a snapshot for a background shell. */
const SNAPSHOT_TIMEOUT_MS = 5_000;

export interface ShellManagerOptions {
  /** Default starting directory (the workspace). */
  workspace: string;
  isolation: Isolation;
  clock: Clock;
  /** Let bash read ~/.bashrc at spawn. default: true */
  loadBashrc?: boolean;
  /** Environment for spawned shells. default: inherited */
  env?: Record<string, string | undefined>;
  /** Every shell runs inside this session's sandbox (isolation is then "sandbox"). */
  sandbox?: ShellSandboxOptions;
}

export interface ShellSandboxOptions {
  /** Makes the sandbox, its private folder inside the session's shell folder. */
  create(folder: string): Promise<Sandbox>;
  /** The allowlist proxy refused a request of a shell started or driven by this call. */
  onBlocked(toolCallId: string | undefined, host: string, port: number): void;
}

export interface ForegroundRun extends RunResult {
  /** The shell was (re)spawned for this call. */
  spawned: boolean;
  /** A workingDir was passed but the shell already existed, so it was ignored. */
  workingDirIgnored: boolean;
  /** Directory a fresh shell starts in (first call's workingDir, else the workspace). */
  initialDir: string;
  bashrcSkipped: boolean;
}

/**
 * Every shell one session owns: the persistent foreground shell (spawned on first use,
 * respawned after it dies) and the background shells by id. dispose() kills them all,
 * with their descendants (see isolation.ts), and removes the temp folder.
 */
export class ShellManager implements Disposable {
  /** The private folder for command files, made on first use (off the event loop). */
  private tempDirMade?: Promise<string>;
  private foreground?: PersistentShell;
  private starting?: Promise<PersistentShell>;
  private initialDir?: string;
  private isolation: Isolation;
  private readonly backgrounds = new Map<string, BackgroundShell>();
  private disposed = false;
  /** The foreground shell started ahead of the first bash call (prewarm), not yet adopted. */
  private spare?: { cwd: string; shell: PersistentShell; started: Promise<boolean> };
  private sandboxMade?: Promise<Sandbox>;
  /** The bash call the foreground shell is running (a refused proxy request is reported as its). */
  private foregroundCall?: string;

  constructor(private readonly options: ShellManagerOptions) {
    this.isolation = options.sandbox ? SANDBOXED : options.isolation;
  }

  /** The sandbox's private $HOME on the host (after the first shell started), if the shells are sandboxed. */
  async sandboxHome(): Promise<string | undefined> {
    return this.options.sandbox ? (await this.sandbox()).privateDir.home : undefined;
  }

  get isolationMode(): Isolation["mode"] {
    return this.isolation.mode;
  }

  /** Host PID of the foreground shell's spawned process, if one is running. */
  get foregroundPid(): number | undefined {
    return this.foreground?.alive ? this.foreground.pid : undefined;
  }

  /** Runs a command in the persistent shell, spawning it (in `workingDir` on the first call) if needed. */
  async run(command: string, options: RunOptions & { workingDir?: string; toolCallId?: string }): Promise<ForegroundRun> {
    const existed = this.foreground?.alive === true;
    const shell = await this.ensureForeground(options.workingDir);
    this.foregroundCall = options.toolCallId;
    const result = await shell.run(command, options);
    return {
      ...result,
      spawned: !existed,
      workingDirIgnored: existed && options.workingDir !== undefined,
      initialDir: this.initialDir!,
      bashrcSkipped: shell.bashrcSkipped,
    };
  }

  /**
   * Starts a background shell in the foreground shell's current directory, with its
   * exported variables, functions and aliases when that shell is idle.
   */
  async startBackground(command: string, workingDir?: string, toolCallId?: string): Promise<BackgroundShell> {
    this.assertOpen();
    this.initialDir ??= workingDir ?? this.options.workspace;
    let cwd = this.initialDir;
    let snapshotFile: string | undefined;
    const shell = this.foreground;
    if (shell?.alive) {
      cwd = shell.cwd;
      if (!shell.busy) {
        const file = join(await this.tempDir(), `snapshot-${backgroundShellId()}.sh`);
        const result = await shell.run(snapshotCommand(file), { timeoutMs: SNAPSHOT_TIMEOUT_MS, maxChars: 1_000 });
        if (result.outcome === "completed") snapshotFile = file;
        cwd = shell.cwd;
      }
    }
    const id = backgroundShellId();
    const tempDir = await this.tempDir();
    const launched = this.options.sandbox ? await this.launch(id, () => toolCallId) : undefined;
    if (this.disposed) await launched?.close();
    this.assertOpen();
    const background = new BackgroundShell({
      id,
      command,
      cwd,
      isolation: this.isolation,
      tempDir,
      clock: this.options.clock,
      env: this.options.env,
      snapshotFile,
      launched,
    });
    this.backgrounds.set(id, background);
    return background;
  }

  background(id: string): BackgroundShell | undefined {
    return this.backgrounds.get(id);
  }

  backgroundIds(): string[] {
    return [...this.backgrounds.keys()];
  }

  /**
   * Starts the foreground shell in the workspace ahead of the first bash call, which adopts
   * it when it would start its shell there with the same isolation (the usual case); a first
   * call with another workingDir closes it and starts its own, as without a warm-up. Until
   * adopted it is only held here, so dispose() ends it like any other shell. Resolves once
   * it has started (or failed to: the first call then starts one the usual way).
   */
  prewarm(): Promise<void> {
    if (this.disposed || this.foreground || this.starting || this.spare) return Promise.resolve();
    const cwd = this.initialDir ?? this.options.workspace;
    const shell = this.makeShell(cwd);
    this.spare = { cwd, shell, started: gatedStart(() => shell.start()).then(() => true, () => false) };
    return this.spare.started.then(() => undefined);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const shells: { dispose(): Promise<void> }[] = [...this.backgrounds.values()];
    if (this.foreground) shells.push(this.foreground);
    if (this.spare) shells.push(this.spare.shell);
    this.spare = undefined;
    await Promise.allSettled(shells.map((shell) => shell.dispose()));
    const made = this.tempDirMade && (await this.tempDirMade.catch(() => undefined));
    if (made) await rm(made, { recursive: true, force: true });
  }

  /** The pid in the folder's name lets the next server clear it if this one is killed (leftovers.ts). */
  private tempDir(): Promise<string> {
    if (!this.tempDirMade) {
      this.tempDirMade = mkdtemp(join(tmpdir(), shellDirPrefix()));
      // A failure is reported to the command that needs the folder, not as an unhandled rejection.
      this.tempDirMade.catch(() => undefined);
    }
    return this.tempDirMade;
  }

  private assertOpen(): void {
    if (this.disposed) throw new Error("the session's shells are closed");
  }

  private async ensureForeground(workingDir: string | undefined): Promise<PersistentShell> {
    this.assertOpen();
    if (this.foreground?.alive) return this.foreground;
    this.starting ??= this.spawnForeground(workingDir).finally(() => (this.starting = undefined));
    return this.starting;
  }

  private makeShell(cwd: string): PersistentShell {
    return new PersistentShell({
      cwd,
      isolation: this.isolation,
      tempDir: this.tempDir(),
      clock: this.options.clock,
      loadBashrc: this.options.loadBashrc,
      env: this.options.env,
      ...(this.options.sandbox ? { launch: (tag: string) => this.launch(tag, () => this.foregroundCall) } : {}),
    });
  }

  private sandbox(): Promise<Sandbox> {
    if (!this.sandboxMade) {
      this.sandboxMade = this.tempDir().then((folder) => this.options.sandbox!.create(folder));
      this.sandboxMade.catch(() => undefined);
    }
    return this.sandboxMade;
  }

  private async launch(name: string, call: () => string | undefined): Promise<ShellLaunch> {
    const sandbox = await this.sandbox();
    return sandboxedLaunch(sandbox, name, (host, port) => this.options.sandbox!.onBlocked(call(), host, port));
  }

  /** The prewarmed shell if it started in `cwd` and still runs; otherwise it is ended. */
  private async adoptSpare(cwd: string): Promise<PersistentShell | undefined> {
    const spare = this.spare;
    this.spare = undefined;
    if (!spare) return undefined;
    if (spare.cwd === cwd && (await spare.started) && spare.shell.alive) return spare.shell;
    await spare.shell.dispose();
    return undefined;
  }

  private async spawnForeground(workingDir: string | undefined): Promise<PersistentShell> {
    this.initialDir ??= workingDir ?? this.options.workspace;
    let shell = await this.adoptSpare(this.initialDir);
    if (!shell) shell = await this.startShell(this.initialDir);
    if (this.disposed) {
      await shell.dispose();
      throw new Error("the session's shells are closed");
    }
    this.foreground = shell;
    return shell;
  }

  private async startShell(cwd: string): Promise<PersistentShell> {
    let shell = this.makeShell(cwd);
    try {
      await gatedStart(() => shell.start());
    } catch (error) {
      // unshare passed the probe but failed here (e.g. a seccomp policy): fall back once.
      // Never out of a sandbox: a shell that cannot start inside it does not start.
      if (this.isolation.mode !== "pid-namespace") throw error;
      this.isolation = PROCESS_GROUP;
      shell = this.makeShell(cwd);
      await gatedStart(() => shell.start());
    }
    return shell;
  }
}
