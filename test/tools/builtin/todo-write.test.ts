import { afterEach, describe, expect, it } from "vitest";
import { MAX_TODO_CONTENT_CHARS, MAX_TODO_ID_CHARS, todoWrite } from "../../../src/tools/builtin/todo-write.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

let harness: ToolHarness;
afterEach(() => harness?.close());

const todos = [
  { id: "1", content: "Read the config file", status: "completed", priority: "high" },
  { id: "2", content: "Write the parser", status: "in_progress", priority: "medium" },
  { id: "3", content: "Add tests", status: "pending", priority: "low" },
];

describe("todo_write", () => {
  it("stores the list, emits todo.updated and renders it", async () => {
    harness = await createToolHarness();
    const result = await harness.call(todoWrite, { todos });
    expect(result.success).toBe(true);
    expect(result.output).toBe(
      [
        "Todo list (3 items: 1 completed, 1 in progress, 1 pending)",
        "[x] Read the config file (id: 1, priority: high)",
        "[~] Write the parser (id: 2, priority: medium)",
        "[ ] Add tests (id: 3, priority: low)",
        "",
        "Legend: [x] completed · [~] in progress · [ ] pending",
      ].join("\n"),
    );
    expect(await harness.store.getTodos(harness.sessionId)).toEqual(todos);
    const updates = harness.events.filter((e) => e.type === "todo.updated");
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ sessionId: harness.sessionId, todos });
  });

  it("replaces the previous list, and [] clears it", async () => {
    harness = await createToolHarness();
    await harness.call(todoWrite, { todos });
    await harness.call(todoWrite, { todos: [{ id: "9", content: "Only this", status: "pending", priority: "high" }] });
    expect((await harness.store.getTodos(harness.sessionId)).map((t) => t.id)).toEqual(["9"]);
    const cleared = await harness.call(todoWrite, { todos: [] });
    expect(cleared.output).toBe("The todo list is empty.");
    expect(await harness.store.getTodos(harness.sessionId)).toEqual([]);
  });

  it("stores only the four known fields of each item", async () => {
    harness = await createToolHarness();
    await harness.call(todoWrite, { todos: [{ ...todos[0], activeForm: "Reading the config file" }] });
    expect(await harness.store.getTodos(harness.sessionId)).toEqual([todos[0]]);
  });

  it("rejects duplicate ids with a clear message and keeps the old list", async () => {
    harness = await createToolHarness();
    await harness.call(todoWrite, { todos });
    const result = await harness.call(todoWrite, { todos: [...todos, { id: "2", content: "again", status: "pending", priority: "low" }] });
    expect(result.success).toBe(false);
    expect(result.output).toBe(
      'Error: VALIDATION_ERROR — duplicate todo id "2" (items 2 and 4); every todo needs a unique id. Rewrite the list with distinct ids.',
    );
    expect(await harness.store.getTodos(harness.sessionId)).toEqual(todos);
    expect(harness.events.filter((e) => e.type === "todo.updated")).toHaveLength(1);
  });

  it.each([
    [{ id: "1", content: "x", status: "done", priority: "high" }, "status"],
    [{ id: "1", content: "x", status: "pending", priority: "urgent" }, "priority"],
    [{ id: "1", content: "x", status: "pending" }, "priority"],
    [{ id: "", content: "x", status: "pending", priority: "low" }, "id"],
  ])("rejects an invalid item %j", async (item, field) => {
    harness = await createToolHarness();
    const result = await harness.call(todoWrite, { todos: [item] });
    expect(result.success).toBe(false);
    expect(result.output).toMatch(new RegExp(`^Error: VALIDATION_ERROR — .*${field}`));
  });

  it("refuses items past the size caps (the list is returned, stored and sent whole on every write), keeping the old list", async () => {
    harness = await createToolHarness();
    await harness.call(todoWrite, { todos });
    const long = await harness.call(todoWrite, { todos: [{ id: "1", content: "x".repeat(MAX_TODO_CONTENT_CHARS + 1), status: "pending", priority: "low" }] });
    expect(long.output).toMatch(/^Error: VALIDATION_ERROR — .*content.*1000/);
    const longId = await harness.call(todoWrite, { todos: [{ id: "i".repeat(MAX_TODO_ID_CHARS + 1), content: "x", status: "pending", priority: "low" }] });
    expect(longId.output).toMatch(/^Error: VALIDATION_ERROR — .*id.*100/);
    expect(await harness.store.getTodos(harness.sessionId)).toEqual(todos);
    const widest = Array.from({ length: 200 }, (_, i) => ({ id: String(i).padStart(MAX_TODO_ID_CHARS, "0"), content: "y".repeat(MAX_TODO_CONTENT_CHARS), status: "pending", priority: "low" }));
    const full = await harness.call(todoWrite, { todos: widest });
    expect(full.success).toBe(true);
    expect(full.output.length).toBeLessThan(256 * 1024);
  });
});
