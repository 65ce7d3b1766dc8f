import { Type } from "../../schema.js";
import { defineTool } from "../define.js";
import type { TodoItem } from "../../store/store.js";

const Params = Type.Object({});

const MARKER: Record<TodoItem["status"], string> = { completed: "[x]", in_progress: "[~]", pending: "[ ]" };

export const todoRead = defineTool({
  name: "todo_read",
  description: "Read the current todo list",
  params: Params,
  readOnly: true,
  async execute(_input, ctx) {
    const todos = await ctx.todos.get();
    return { output: renderTodos(todos), details: { todos } };
  },
});

/** The list as the model reads it: one line per item with a status marker and priority. */
export function renderTodos(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return "The todo list is empty.";
  const count = (status: TodoItem["status"]) => todos.filter((t) => t.status === status).length;
  const head =
    `Todo list (${todos.length} item${todos.length === 1 ? "" : "s"}: ` +
    `${count("completed")} completed, ${count("in_progress")} in progress, ${count("pending")} pending)`;
  const lines = todos.map((t) => `${MARKER[t.status]} ${t.content} (id: ${t.id}, priority: ${t.priority})`);
  return `${head}\n${lines.join("\n")}\n\nLegend: [x] completed · [~] in progress · [ ] pending`;
}
