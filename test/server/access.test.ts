import { describe, expect, it } from "vitest";
import { requiredScope, sessionOfRequest } from "../../src/server/access.js";
import { hasScope, ownerScope, SECRET_PRINCIPAL, type Principal } from "../../src/core/access/principal.js";

const key = (scopes: ("read" | "chat" | "admin")[]): Principal => ({ id: "key_1", scopes: new Set(scopes), agents: null, key: null });

describe("scopes of routes", () => {
  it("reads need read (but the keys' and the audit's), the chat routes chat, everything else admin", () => {
    const table: [string, string, string][] = [
      ["GET", "/sessions", "read"],
      ["GET", "/sessions/s1/events", "read"],
      ["GET", "/memory/notes.md", "read"],
      ["HEAD", "/events", "read"],
      ["GET", "/keys", "admin"],
      ["GET", "/keys/key_1", "admin"],
      ["GET", "/audit", "admin"],
      ["POST", "/stream-tokens", "read"],
      ["DELETE", "/stream-tokens/abc", "read"],
      ["DELETE", "/stream-tokens", "read"],
      ["POST", "/sessions", "chat"],
      ["POST", "/sessions/s1/chat", "chat"],
      ["POST", "/sessions/s1/cancel", "chat"],
      ["POST", "/sessions/s1/suspend", "chat"],
      ["POST", "/sessions/s1/resume", "chat"],
      ["POST", "/sessions/s1/compact", "chat"],
      ["POST", "/sessions/s1/revert", "chat"],
      ["POST", "/sessions/s1/fork", "chat"],
      ["DELETE", "/sessions/s1", "chat"],
      ["POST", "/remote-methods/m1/result", "chat"],
      ["POST", "/completions", "chat"],
      ["POST", "/v1/chat/completions", "chat"],
      ["POST", "/sessions/s1/wakeup", "admin"],
      ["DELETE", "/sessions/s1/wakeup", "admin"],
      ["PUT", "/memory/notes.md", "admin"],
      ["PUT", "/agents/default/memory/notes.md", "admin"],
      ["POST", "/keys", "admin"],
      ["DELETE", "/keys/key_1", "admin"],
      ["POST", "/something-new", "admin"],
    ];
    expect(table.map(([method, path]) => [method, path, requiredScope(method, path)])).toEqual(table);
  });

  it("chat includes read, admin everything; only admin keys (and the secret) see every session", () => {
    expect([hasScope(key(["read"]), "read"), hasScope(key(["read"]), "chat"), hasScope(key(["read"]), "admin")]).toEqual([true, false, false]);
    expect([hasScope(key(["chat"]), "read"), hasScope(key(["chat"]), "chat"), hasScope(key(["chat"]), "admin")]).toEqual([true, true, false]);
    expect([hasScope(key(["admin"]), "read"), hasScope(key(["admin"]), "chat"), hasScope(key(["admin"]), "admin")]).toEqual([true, true, true]);
    expect([ownerScope(key(["chat"])), ownerScope(key(["admin"])), ownerScope(SECRET_PRINCIPAL)]).toEqual(["key_1", undefined, undefined]);
  });

  it("finds the session a request names, in its path or as /events?session=", () => {
    const none = () => undefined;
    expect(sessionOfRequest("/sessions/sess_1/chat", none)).toBe("sess_1");
    expect(sessionOfRequest("/sessions/a%2Fb", none)).toBe("a/b");
    expect(sessionOfRequest("/sessions/%E0%A4%A", none)).toBe("%E0%A4%A");
    expect(sessionOfRequest("/sessions", none)).toBeUndefined();
    expect(sessionOfRequest("/events", (name) => (name === "session" ? "sess_2" : undefined))).toBe("sess_2");
    expect(sessionOfRequest("/remote-methods", () => "sess_3")).toBeUndefined();
  });
});
