import type { LlmClient } from "../../llm/types.js";

/** The client, telling `failed` the code of every model call that ends in an error (a cancel is not one). */
export function reportingFailures(llm: LlmClient, failed: (code: string) => void): LlmClient {
  return {
    async *stream(request) {
      for await (const event of llm.stream(request)) {
        if (event.type === "error" && event.error.code !== "CANCELLED") failed(event.error.code);
        yield event;
      }
    },
    ...(llm.checkReady ? { checkReady: (key: string) => llm.checkReady!(key) } : {}),
  };
}
