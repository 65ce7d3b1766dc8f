import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { findBackground } from "../shared/shell/session-shells.js";
import { renderPoll } from "./bash-output.js";

const Params = Type.Object(
  {
    shell_id: Type.String({ minLength: 1, description: "The shell_id of the background shell to terminate." }),
  },
  { additionalProperties: false },
);

export const killShell = defineTool({
  name: "kill_shell",
  description:
    "Terminate a background shell and everything it started: SIGTERM, then SIGKILL after 2 seconds if it is still alive. " +
    "Returns the final state (status, exit code, signal, byte totals) and any output not yet read.",
  params: Params,
  async execute(input: Static<typeof Params>, ctx) {
    const shell = findBackground(ctx, input.shell_id);
    const wasRunning = shell.running;
    await shell.kill();
    const poll = shell.poll();
    const note = wasRunning ? null : "the command had already finished; any processes it left behind were killed";
    return { output: renderPoll(poll, [["note", note]]), details: { ...poll.state, wasRunning } };
  },
});
