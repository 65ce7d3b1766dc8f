import { afterEach, describe, expect, it } from "vitest";
import { todoRead } from "../../../src/tools/builtin/todo-read.js";
import { todoWrite } from "../../../src/tools/builtin/todo-write.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

let harness: ToolHarness;
afterEach(() => harness?.close());

describe("todo_read", () => {
  it("says the list is empty when nothing was written", async () => {
    harness = await createToolHarness();
    expect(await harness.call(todoRead, {})).toMatchObject({ output: "The todo list is empty.", success: true });
  });

  it("renders the stored list with markers and priorities, in order", async () => {
    harness = await createToolHarness();
    await harness.call(todoWrite, {
      todos: [
        { id: "a", content: "Plan", status: "completed", priority: "low" },
        { id: "b", content: "Build", status: "in_progress", priority: "high" },
      ],
    });
    const { output } = await harness.call(todoRead, {});
    expect(output.split("\n").slice(0, 3)).toEqual([
      "Todo list (2 items: 1 completed, 1 in progress, 0 pending)",
      "[x] Plan (id: a, priority: low)",
      "[~] Build (id: b, priority: high)",
    ]);
  });

  it("reads only its own session's list", async () => {
    harness = await createToolHarness();
    await harness.store.setTodos("sess_elsewhere", [{ id: "1", content: "other", status: "pending", priority: "low" }]);
    expect((await harness.call(todoRead, {})).output).toBe("The todo list is empty.");
  });
});
