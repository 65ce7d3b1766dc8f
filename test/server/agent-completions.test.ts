import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const RESEARCHER = {
  ".veil/agents/researcher/agent.json": JSON.stringify({ description: "digs", model: "fake-model" }),
  ".veil/agents/researcher/AGENT.md": "You research.",
};

function userTexts(body: any): string[] {
  return body.messages.filter((m: any) => m.role === "user").map((m: any) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

describe("agent/<name> over POST /v1/chat/completions", () => {
  it("runs the agent's loop with its tools, then continues the session streamed, with the official openai client", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });

    h.llm.enqueue(reply().tool("bash", { command: "echo wire-$((40+2))" }).stop());
    h.llm.enqueue(reply().text("bash said wire-42").usage({ prompt_tokens: 11, completion_tokens: 4 }).stop());
    const { data: plain, response } = await client.chat.completions
      .create({ model: "agent/default", messages: [{ role: "user", content: "run the echo" }] })
      .withResponse();
    const sessionId = response.headers.get("x-veil-session")!;
    expect(sessionId).toMatch(/^sess_/);
    expect(plain.object).toBe("chat.completion");
    expect(plain.model).toBe(`agent/default/${sessionId}`);
    expect(plain.choices[0]!.message).toMatchObject({ role: "assistant", content: "bash said wire-42" });
    expect(plain.choices[0]!.finish_reason).toBe("stop");
    expect(plain.usage?.completion_tokens).toBeGreaterThanOrEqual(4);
    // The tool really ran: its output went back to the model in the second call.
    const second = h.llm.completionRequests[1]!.body;
    expect(second.messages.find((m: any) => m.role === "tool").content).toContain("wire-42");
    expect(second.tools.map((t: any) => t.function.name)).toContain("bash");
    const session = await (await server.fetch(`/sessions/${sessionId}`)).json();
    expect(session.agent).toBe("default");

    h.llm.enqueue(reply().tool("bash", { command: "echo second" }).stop());
    h.llm.enqueue(reply().text("streamed ").text("answer").stop());
    const stream = await client.chat.completions.create({
      model: plain.model,
      stream: true,
      messages: [
        { role: "user", content: "ignored: the session holds it" },
        { role: "assistant", content: "bash said wire-42" },
        { role: "user", content: "again, streamed" },
      ],
    });
    let text = "";
    let finish: string | null = null;
    const models = new Set<string>();
    for await (const chunk of stream) {
      models.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe("streamed answer");
    expect(finish).toBe("stop");
    expect([...models]).toEqual([`agent/default/${sessionId}`]);
    // The continued call saw the whole session history and only the new user message was added.
    const fourth = h.llm.completionRequests[3]!.body;
    expect(userTexts(fourth)).toEqual(["run the echo", "again, streamed"]);
    const rows = await (await server.fetch(`/sessions/${sessionId}/messages`)).json();
    expect(rows.filter((r: any) => r.role === "user").map((r: any) => r.content)).toEqual(["run the echo", "again, streamed"]);
  });

  it("streams tool activity as SSE comment lines, text as chunk deltas, then [DONE]", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    h.llm.enqueue(reply().tool("bash", { command: "echo tool-line" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const res = await server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "agent/default", stream: true, messages: [{ role: "user", content: "go" }] }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const sessionId = res.headers.get("x-veil-session");
    const raw = await res.text();
    const lines = raw.split("\n").filter(Boolean);
    const start = lines.findIndex((l) => l.startsWith(": tool bash {"));
    const end = lines.findIndex((l) => l.startsWith(": tool bash ok "));
    expect(lines[start]).toContain("echo tool-line");
    expect(end).toBeGreaterThan(start);
    expect(lines[end]).toContain("tool-line");
    const chunks = lines.filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)));
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === `agent/default/${sessionId}`)).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("ok");
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "stop")).toBe(true);
    expect(lines.at(-1)).toBe("data: [DONE]");
  });

  it("sends the earlier turns of a new conversation as context in one message", async () => {
    h = await createRuntimeHarness({ files: RESEARCHER });
    const server = await h.serve();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    h.llm.enqueue(reply().text("Paris, still").stop());
    const answer = await client.chat.completions.create({
      model: "agent/researcher",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "capital of France?" },
        { role: "assistant", content: "Paris" },
        { role: "user", content: "and now?" },
      ],
    });
    expect(answer.choices[0]!.message.content).toBe("Paris, still");
    const users = userTexts(h.llm.completionRequests[0]!.body);
    expect(users).toHaveLength(1);
    expect(users[0]).toContain("system: be brief");
    expect(users[0]).toContain("user: capital of France?");
    expect(users[0]).toContain("assistant: Paris");
    expect(users[0]!.endsWith("and now?")).toBe(true);
    expect(h.llm.completionRequests[0]!.body.messages[0].content).toContain("You research.");
  });

  it("answers 404 for an unknown session or agent, 400 for another agent's session; plain keys stay the proxy", async () => {
    h = await createRuntimeHarness({ files: RESEARCHER });
    const server = await h.serve();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    const post = (model: string) => server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });

    const missing = await post("agent/default/sess_nope");
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe("SESSION_NOT_FOUND");
    const ghost = await post("agent/ghost");
    expect(ghost.status).toBe(404);
    expect((await ghost.json()).error.code).toBe("AGENT_NOT_FOUND");
    const bad = await post("agent/");
    expect(bad.status).toBe(400);

    const other = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "researcher" }) })).json();
    const wrong = await post(`agent/default/${other.id}`);
    expect(wrong.status).toBe(400);
    const error = (await wrong.json()).error;
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.message).toContain(`agent/researcher/${other.id}`);
    const noUser = await server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "agent/default", messages: [{ role: "system", content: "x" }] }) });
    expect(noUser.status).toBe(400);
    expect(h.llm.completionRequests).toHaveLength(0);
    expect(await h.runtime.store.listMessages(other.id)).toHaveLength(0);

    h.llm.enqueue(reply().text("proxied").stop());
    const proxied = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "hi" }] });
    expect(proxied.choices[0]!.message.content).toBe("proxied");
    expect(h.llm.completionRequests[0]!.body.tools).toBeUndefined();
  });
});
