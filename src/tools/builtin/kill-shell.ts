import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { findBackground } from "../shared/shell/session-shells.js";
import { renderPoll } from "./bash-output.js";

const Params = Type.Object(
  {
    shell_id: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);

export const killShell = defineTool({
  name: "kill_shell",
  description:
    "Terminate a background shell (SIGTERM, then SIGKILL after 2 s); returns its final state.",
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
