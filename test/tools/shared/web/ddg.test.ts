import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeResultUrl, parseDdgResults } from "../../../../src/tools/shared/web/ddg.js";

const fixture = (name: string) => readFileSync(new URL(`../../../fixtures/ddg/${name}`, import.meta.url), "utf8");

describe("parseDdgResults", () => {
  it("reads titles, decoded target URLs and snippets, skipping ads", () => {
    const page = parseDdgResults(fixture("results.html"));
    expect(page.challenge).toBe(false);
    expect(page.noResults).toBe(false);
    expect(page.resultBlocks).toBe(7);
    expect(page.results).toHaveLength(6);
    expect(page.results[0]).toEqual({
      title: "Tokio - An asynchronous Rust runtime",
      url: "https://tokio.rs/",
      snippet: "Tokio is an asynchronous runtime for the Rust programming language. It provides the building blocks needed for writing network applications & more.",
    });
    expect(page.results[1]!.url).toBe("https://rust-lang.github.io/async-book/01_getting_started/01_chapter.html?q=a%20b&x=1");
    expect(page.results[1]!.snippet).toContain("If you're looking");
    expect(page.results[4]!.url).toBe("https://en.wikipedia.org/wiki/Async%2Fawait");
    expect(page.results.map((r) => r.title).join(" ")).not.toContain("Sponsored");
  });

  it("recognises the no-results page", () => {
    const page = parseDdgResults(fixture("no-results.html"));
    expect(page).toMatchObject({ results: [], noResults: true, challenge: false });
  });

  it("recognises the anomaly (bot challenge) page", () => {
    const page = parseDdgResults(fixture("anomaly.html"));
    expect(page).toMatchObject({ results: [], noResults: false, challenge: true });
  });

  it("finds nothing in a page with other markup", () => {
    const page = parseDdgResults("<html><body><div class='results-v2'><article><h2>New layout</h2></article></div></body></html>");
    expect(page).toMatchObject({ results: [], noResults: false, challenge: false, resultBlocks: 0 });
  });
});

describe("decodeResultUrl", () => {
  it("decodes uddg redirects once and passes direct links through", () => {
    expect(decodeResultUrl("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fx%3Fy%3D1&rut=z")).toBe("https://a.example/x?y=1");
    expect(decodeResultUrl("/l/?kh=-1&uddg=http%3A%2F%2Fb.example%2F")).toBe("http://b.example/");
    expect(decodeResultUrl("https://c.example/page")).toBe("https://c.example/page");
    expect(decodeResultUrl("https://duckduckgo.com/y.js?ad_domain=x")).toBeNull();
    expect(decodeResultUrl("javascript:alert(1)")).toBeNull();
  });
});
