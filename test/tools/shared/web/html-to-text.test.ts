import { describe, expect, it } from "vitest";
import { htmlToText } from "../../../../src/tools/shared/web/html-to-text.js";

describe("htmlToText", () => {
  const html = `<!doctype html><html><head><title>My  Page</title><style>body{color:red}</style>
<script>var x = "<p>never</p>";</script></head>
<body><nav><a href="/home">Home</a> | <a href="#top">Top</a></nav>
<h1>Hello &amp; welcome</h1><p>First   para with <a href="https://ex.com/a">a link</a> and <code>code()</code>.</p>
<p><a href="rel">Para link</a></p>
<ul><li>one</li><li>two<ol><li>inner a</li><li>inner b</li></ol></li></ul>
<pre>line 1
  line 2</pre><noscript>enable javascript</noscript><svg><title>svg title</title><text>vector</text></svg>
<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>
<img alt="a cat" src="x.png"><br>after br<hr>end<template><p>hidden template</p></template></body></html>`;
  const { title, text } = htmlToText(html, "https://site.test/dir/page");

  it("takes the title from <head> and drops script, style, noscript, svg and template", () => {
    expect(title).toBe("My Page");
    for (const gone of ["never", "color:red", "enable javascript", "svg title", "vector", "hidden template"]) expect(text).not.toContain(gone);
  });

  it("renders headings, links, lists, code, tables and rules as light markdown", () => {
    expect(text).toBe(
      [
        "[Home](https://site.test/home) | Top",
        "",
        "# Hello & welcome",
        "",
        "First para with [a link](https://ex.com/a) and `code()`.",
        "",
        "[Para link](https://site.test/dir/rel)",
        "",
        "- one",
        "- two",
        "  1. inner a",
        "  2. inner b",
        "",
        "```",
        "line 1",
        "  line 2",
        "```",
        "",
        "A | B",
        "1 | 2",
        "",
        "[image: a cat]",
        "after br",
        "",
        "---",
        "",
        "end",
      ].join("\n"),
    );
  });

  it("reads the body when </head> and <body> are missing, and labels image links", () => {
    expect(htmlToText("<html><head><title>T</title><body><p>Hi</p></body></html>")).toEqual({ title: "T", text: "Hi" });
    expect(htmlToText("<head><meta charset=utf-8><title>T</title><p>Para without body")).toEqual({ title: "T", text: "Para without body" });
    expect(htmlToText("<a href='https://a.b/x'><img alt='logo'></a> <p>text <a href='https://a.b/'> </a> end").text).toBe(
      "[image: logo](https://a.b/x)\n\ntext end",
    );
  });

  it("copes with unclosed tags and entities", () => {
    expect(htmlToText("<p>a &lt;b&gt; &#x27;c&#x27;<p>second<div>third").text).toBe("a <b> 'c'\n\nsecond\n\nthird");
  });
});
