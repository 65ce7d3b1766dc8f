import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import type { TodoItem } from "../../store/store.js";
import { renderTodos } from "./todo-read.js";

const MAX_ITEMS = 200;
/**
 * One item is one line of a plan; these caps keep the whole list (stored, sent in
 * todo.updated and returned to the model on every write) within ~210 KB.
 */
export const MAX_TODO_ID_CHARS = 100;
export const MAX_TODO_CONTENT_CHARS = 1000;

const Todo = Type.Object(
  {
    // Unique within the list; the caps and enums speak for themselves to the model.
    id: Type.String({ minLength: 1, maxLength: MAX_TODO_ID_CHARS }),
    content: Type.String({ minLength: 1, maxLength: MAX_TODO_CONTENT_CHARS }),
    status: Type.Unsafe<TodoItem["status"]>({ type: "string", enum: ["pending", "in_progress", "completed"] }),
    priority: Type.Unsafe<TodoItem["priority"]>({ type: "string", enum: ["high", "medium", "low"] }),
  },
);

const Params = Type.Object({
  todos: Type.Array(Todo, { maxItems: MAX_ITEMS }),
});

export const todoWrite = defineTool({
  name: "todo_write",
  description:
    "Write the todo list for the current task (replaces the previous one).",
  params: Params,
  async execute(input: Static<typeof Params>, ctx) {
    const seen = new Map<string, number>();
    input.todos.forEach((todo, i) => {
      const first = seen.get(todo.id);
      if (first !== undefined) {
        throw new ToolError(
          "VALIDATION_ERROR",
          `duplicate todo id "${todo.id}" (items ${first + 1} and ${i + 1}); every todo needs a unique id. Rewrite the list with distinct ids.`,
        );
      }
      seen.set(todo.id, i);
    });
    const todos: TodoItem[] = input.todos.map(({ id, content, status, priority }) => ({ id, content, status, priority }));
    await ctx.todos.set(todos);
    await ctx.emit({ type: "todo.updated", todos });
    return { output: renderTodos(todos), details: { todos } };
  },
});
