import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { xmlEnvelope } from "../format.js";
import type { BackgroundPoll } from "../shared/shell/background-shell.js";
import { findBackground } from "../shared/shell/session-shells.js";

const Params = Type.Object(
  {
    shell_id: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);

export const bashOutput = defineTool({
  name: "bash_output",
  description:
    "Poll a background shell for new output since the last read (non-blocking), with status and exit code.",
  params: Params,
  readOnly: true,
  async execute(input: Static<typeof Params>, ctx) {
    const poll = findBackground(ctx, input.shell_id).poll();
    return { output: renderPoll(poll), details: { ...poll.state, newBytes: poll.newBytes } };
  },
});

/** The XML envelope bash_output answers with (kill_shell reuses it for the final state). */
export function renderPoll(poll: BackgroundPoll, extra: [string, string | number | null][] = []): string {
  const { state } = poll;
  const notes: string[] = [];
  if (poll.droppedBytes > 0) {
    notes.push(`[${poll.droppedBytes} bytes of output were dropped unread: the buffer keeps 256 KB between polls. Poll more often or redirect to a file.]`);
  }
  if (poll.omittedChars > 0) notes.push(`[${poll.omittedChars} earlier chars of the new output omitted; showing the most recent ones.]`);
  const text = [...notes, poll.output.replace(/[\r\n]+$/, "")].filter(Boolean).join("\n");
  return xmlEnvelope([
    ["shell_id", state.shell_id],
    ["status", state.status],
    ["exit_code", state.status === "running" ? undefined : state.exitCode],
    ["signal", state.signal],
    ...extra,
    ["total_bytes", state.totalBytes],
    ["new_bytes", poll.newBytes],
    ["output", text || "(no new output)"],
  ]);
}
