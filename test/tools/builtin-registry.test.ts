import { describe, expect, it } from "vitest";
import { allBuiltinTools as builtinTools } from "../../src/core/builtins.js";
import { sharedValidators } from "../../src/base/validation.js";

/**
 * Fields sent without a description: the manual's text for them only restates the name
 * ("Content to write", "Log message"), and each description costs every request context.
 */
const SELF_EXPLANATORY = new Set([
  "bash.command", "bash_output.shell_id", "kill_shell.shell_id", "write_file.content", "edit_file.new_string", "edit_file.replace_all",
  "list_dir.dir", "list_dir.recursive", "grep.recursive", "web_search.query", "web_fetch.url", "memory_write.content", "memory_search.query",
  "todo_write.todos", "agent_spawn.agent", "agent_message.message", "agent_control.sessionId", "log_write.message", "log_write.metadata",
  "sleep.seconds", "tool_search.query",
]);

describe("built-in tool registry", () => {
  it("has unique snake_case names, a description, and a schema that compiles with every field described unless its name says it all", () => {
    const tools = builtinTools();
    const names = tools.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const tool of tools) {
      expect(tool.name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(tool.description.length).toBeGreaterThan(10);
      expect(() => sharedValidators.compile(tool.inputSchema)).not.toThrow();
      expect(tool.inputSchema.type).toBe("object");
      for (const [field, schema] of Object.entries((tool.inputSchema.properties ?? {}) as Record<string, { description?: string }>)) {
        if (SELF_EXPLANATORY.has(`${tool.name}.${field}`)) expect(schema.description, `${tool.name}.${field}`).toBeUndefined();
        else expect(schema.description, `${tool.name}.${field} has no description`).toBeTruthy();
      }
    }
  });

  it("rejects input of the wrong shape with a message that names the field", () => {
    const logWrite = builtinTools().find((t) => t.name === "log_write")!;
    expect(logWrite.validate({ message: "ok" })).toBeNull();
    expect(logWrite.validate({ message: 3 })).toMatch(/"message" must be string/);
    expect(logWrite.validate({})).toMatch(/missing required field "message"/);
  });
});

describe("the documented tool list", () => {
  it("registers exactly the 24 built-in tools", () => {
    expect(builtinTools().map((t) => t.name)).toEqual([
      "bash", "bash_output", "kill_shell", "read_file", "write_file", "edit_file", "list_dir", "glob", "grep",
      "web_search", "web_fetch", "memory_read", "memory_write", "memory_search", "todo_write", "todo_read",
      "agent_spawn", "agent_message", "agent_control", "log_write", "sleep", "schedule_wakeup", "tool_search", "tool_activate",
    ]);
  });
});
