import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

beforeAll(async () => {
  // The page is built by `npm run build`; a file run alone on a fresh tree builds it the same way.
  if (!existsSync(`${REPO}dist/dashboard/app.js`)) await promisify(execFile)(process.execPath, [`${REPO}dashboard/build.mjs`], { cwd: REPO });
}, 60_000);

async function served() {
  h = await createRuntimeHarness();
  return h.serve();
}

describe("GET / (the dashboard's static files)", () => {
  it("serves the page without a token, with a strict content-security policy, and nothing else opens up", async () => {
    const server = await served();
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('src="/dashboard/app.js"');
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ["/dashboard/app.js", "/dashboard/app.css", "/dashboard/favicon.svg"]) expect((await fetch(`${server.url}${asset}`)).status).toBe(200);
    expect((await fetch(`${server.url}/sessions`)).status).toBe(401);
    expect((await fetch(`${server.url}/dashboard/other.js`)).status).toBe(401);
  });

  it("sends gzip when asked, answers 304 to a matching ETag, and HEAD like GET", async () => {
    const server = await served();
    const plain = await fetch(`${server.url}/dashboard/app.js`, { headers: { "accept-encoding": "identity" } });
    const body = Buffer.from(await plain.arrayBuffer());
    expect(plain.headers.get("content-encoding")).toBeNull();
    const etag = plain.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);

    const { request } = await import("node:http");
    const gz = await new Promise<{ encoding?: string; data: Buffer }>((resolve, reject) => {
      const req = request(`${server.url}/dashboard/app.js`, { headers: { "accept-encoding": "gzip" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ encoding: res.headers["content-encoding"], data: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      req.end();
    });
    expect(gz.encoding).toBe("gzip");
    expect(gunzipSync(gz.data).equals(body)).toBe(true);
    expect(gz.data.length).toBeLessThan(body.length);

    const cached = await fetch(`${server.url}/dashboard/app.js`, { headers: { "if-none-match": etag } });
    expect(cached.status).toBe(304);
    const head = await fetch(`${server.url}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/html; charset=utf-8");
  });
});
