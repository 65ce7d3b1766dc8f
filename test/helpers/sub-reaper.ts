import { spawn } from "node:child_process";

/** What a command left behind: processes re-parented to the sub-reaper after it exited. */
export interface ReapedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Each left-behind process as "<pid> <name>", in the order they were reaped. */
  orphans: string[];
}

/**
 * Runs `argv` under a child sub-reaper (prctl PR_SET_CHILD_SUBREAPER, from python3: Node has
 * no prctl), so a process the command orphans (a double fork, a grandchild whose parent died
 * first) is re-parented to it instead of the host's init, and is counted. The reaper waits
 * for every process of the tree; a name is read from /proc before the zombie is reaped.
 */
const REAPER = String.raw`
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0: sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
child = os.fork()
if child == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
code, orphans = None, []
while True:
    try:
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        break
    try:
        name = open("/proc/%d/comm" % info.si_pid).read().strip()
    except OSError:
        name = "?"
    pid, status = os.waitpid(info.si_pid, 0)
    if pid == child: code = os.waitstatus_to_exitcode(status)
    else: orphans.append("%d %s" % (pid, name))
sys.stderr.write("\nREAPED " + json.dumps({"code": code, "orphans": orphans}) + "\n")
`;

export function runUnderSubReaper(argv: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<ReapedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn("python3", ["-c", REAPER, ...argv], { env: options.env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += String(d)));
    child.stderr.on("data", (d) => (stderr += String(d)));
    child.once("error", reject);
    child.once("close", () => {
      const at = stderr.lastIndexOf("\nREAPED ");
      if (at < 0) return reject(new Error(`the sub-reaper reported nothing: ${stderr}`));
      const report = JSON.parse(stderr.slice(at + "\nREAPED ".length)) as { code: number | null; orphans: string[] };
      resolve({ code: report.code, stdout, stderr: stderr.slice(0, at), orphans: report.orphans });
    });
  });
}
