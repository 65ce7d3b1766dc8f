import type { Hono } from "hono";
import type { AppEnv } from "./context.js";

/**
 * HEAD is answered wherever GET is: the GET route runs and its answer goes out without a
 * body. Hono's own HEAD handling copies the GET answer into a body-less Response, which
 * @hono/node-server's Response cannot build from an answer made without options (a c.text():
 * 500), and it never reads the GET body, so a stream (SSE) behind it stayed subscribed.
 * Here the body is cancelled, which ends such a stream at once.
 */
export function answerHeadWithGet(app: Hono<AppEnv>): void {
  const dispatch = app.fetch;
  app.fetch = async (request, env, executionCtx) => {
    if (request.method !== "HEAD") return dispatch(request, env, executionCtx);
    const answer = await dispatch(new Request(request, { method: "GET" }), env, executionCtx);
    await answer.body?.cancel().catch(() => undefined);
    return new Response(null, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
  };
}
