import { FORWARDER_VARIABLE } from "./launch.js";

/**
 * The bash side of the persistent-shell protocol. Node writes one short driver line
 * per command to the shell's stdin; the command itself sits in a temp file that is
 * `source`d with stdin from /dev/null, so a command that reads stdin (`cat`, `read x`)
 * sees EOF instead of swallowing the next driver line. When it ends, `__veil_post`
 * prints a sentinel carrying a per-command random token, `$?`, a syntax flag and
 * `$PWD`, on a private dup of the output pipe (so `exec >/dev/null` in a command
 * cannot hide it).
 */

/** Variables that make interactive programs fail fast instead of waiting for a human. */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = {
  GIT_TERMINAL_PROMPT: "0",
  GIT_PAGER: "cat",
  PAGER: "cat",
  MANPAGER: "cat",
  SYSTEMD_PAGER: "",
  GIT_EDITOR: "true",
  GIT_SSH_COMMAND: "ssh -o BatchMode=yes",
  DEBIAN_FRONTEND: "noninteractive",
  PIP_NO_INPUT: "1",
  PYTHONUNBUFFERED: "1",
  TERM: "dumb",
  NO_COLOR: "1",
};

/** Environment variable carrying a shell's tag; the /proc fallback finds descendants by it. */
export const TAG_VARIABLE = "VEIL_SHELL_TAG";

/** Quotes a string for bash as one word. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function exportLines(tag: string): string {
  const vars = { ...NON_INTERACTIVE_ENV, [TAG_VARIABLE]: tag };
  return Object.entries(vars)
    .map(([name, value]) => `export ${name}=${shellQuote(value)}`)
    .join("\n");
}

/** Start and end markers of a sentinel; the token is random per command. */
export function sentinelMarkers(token: string): { start: string; end: string } {
  return { start: `\x1e__VEIL_${token}__:`, end: `:__VEIL_${token}__\x1e` };
}

/**
 * Runs once after bash started (and read ~/.bashrc). Merges stderr into stdout so the
 * output keeps the order it was produced in, silences prompts and history, and
 * defines the two helper functions.
 *
 * `__veil_pre` sources a check file in which the command is the body of a function
 * that is never called (see checkScript): a parse without execution, in-process, with
 * no `bash -n` fork/exec. An unterminated heredoc, quote or block fails there with
 * bash's own message (written to a file Node reads) and nothing runs. Sourcing a file
 * matters: a failed parse inside `eval` leaves bash's parser in a state that garbles
 * the next line it reads (our next driver line, whose sentinel then never comes).
 */
export function initScript(tag: string): string {
  return [
    "exec 2>&1",
    "exec {__veil_fd}>&1",
    `unset HISTFILE PROMPT_COMMAND MAILCHECK ${FORWARDER_VARIABLE}`,
    "set +o history +H",
    "PS1='' PS2='' PS0='' PS4='+ '",
    "shopt -s expand_aliases",
    exportLines(tag),
    `__veil_pre() {
  builtin local __veil_xg=0 __veil_rc=0
  builtin shopt -q extglob && __veil_xg=1
  builtin shopt -s extglob
  builtin source "$1" < /dev/null 2>"$2" || __veil_rc=2
  (( __veil_xg )) || builtin shopt -u extglob
  builtin unset -f __veil_parse __veil_inner
  (( __veil_rc == 0 )) || __veil_syn=1
  return $__veil_rc
}`,
    `__veil_post() {
  builtin printf '\\036__VEIL_%s__:%s:%s:%s:__VEIL_%s__\\036' "$1" "$2" "\${__veil_syn:-0}" "$PWD" "$1" >&"$__veil_fd"
  __veil_syn=0
}`,
    "",
  ].join("\n");
}

/**
 * The check file for a command. The body sits inside `{ f() ( … ) }` so that a stray
 * `}` or `)` in a broken command cannot close the wrapper and get the rest executed:
 * a lone `}` inside `( … )` is a syntax error, and after a lone `)` the rest is still
 * inside the outer function body. The command starts on the first line so bash's line
 * numbers match the user's.
 */
export function checkScript(command: string): string {
  return `__veil_parse() { __veil_inner() ( ${command}\n:\n) }\n`;
}

/** The one line Node writes per command. */
export function driverLine(files: { command: string; check: string; checkErrors: string }, token: string): string {
  const command = shellQuote(files.command);
  // The helpers run with stderr on /dev/null so a user's `set -x` does not trace them.
  return (
    `{ __veil_pre ${shellQuote(files.check)} ${shellQuote(files.checkErrors)}; } 2>/dev/null && ` +
    `builtin source ${command} < /dev/null; { __veil_post ${token} $?; } 2>/dev/null\n`
  );
}

/** Reports readiness (and the starting directory) through the normal sentinel. */
export function readyLine(token: string): string {
  return `__veil_post ${token} 0\n`;
}

/**
 * The script a background shell runs: same environment and stdin rules, with the
 * foreground shell's exported variables, functions and aliases when a snapshot exists.
 */
export function backgroundScript(commandFile: string, tag: string, snapshotFile?: string): string {
  return [
    "exec 2>&1",
    "shopt -s expand_aliases",
    snapshotFile ? `builtin source ${shellQuote(snapshotFile)} >/dev/null 2>&1` : "",
    exportLines(tag),
    `builtin source ${shellQuote(commandFile)} < /dev/null`,
  ]
    .filter(Boolean)
    .join("\n");
}

/** Writes what a background shell should inherit from the foreground one. */
export function snapshotCommand(snapshotFile: string): string {
  return [
    `{ export -p; __veil_fns=$(compgen -A function | grep -v '^__veil_')`,
    `[ -z "$__veil_fns" ] || declare -f $__veil_fns; unset __veil_fns; alias -p; } > ${shellQuote(snapshotFile)} 2>/dev/null`,
  ].join("; ");
}

/** Parses the sentinel payload `ec:syntax:pwd`. */
export function parseSentinel(payload: string): { exitCode: number; syntaxError: boolean; cwd: string } {
  const first = payload.indexOf(":");
  const second = payload.indexOf(":", first + 1);
  return {
    exitCode: Number(payload.slice(0, first)),
    syntaxError: payload.slice(first + 1, second) === "1",
    cwd: payload.slice(second + 1),
  };
}
