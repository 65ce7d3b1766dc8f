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

  // The converter drives htmlparser2's tokenizer itself and rebuilds the Parser's tree rules;
  // these pin the rules that change the text (expected values are the htmlparser2 Parser's).
  it("closes elements the way htmlparser2's Parser does", () => {
    expect(htmlToText("<div><p>one<div>two</div><p>three</p></div></p>after</br>br").text).toBe("one\n\ntwo\n\nthree\n\nafter\nbr");
    expect(htmlToText("<div><a href='/x'>open link <b>bold</div>tail", "https://site.test/dir/").text).toBe("[open link bold](https://site.test/x)\ntail");
    expect(htmlToText("<svg><a href='/s'/>gone</svg><p/>self-closing p is open<br/>x").text).toBe("self-closing p is open\nx");
    expect(htmlToText("<pre>unclosed\n  code").text).toBe("```\nunclosed\n  code\n```");
    expect(htmlToText("<ul><li>a<li>b<ol start=3><li>c<li>d</ol></ul><table><tr><td>1<td>2<tr><td>3</table>").text).toBe(
      "- a\n- b\n  3. c\n  4. d\n\n1 | 2\n3",
    );
  });

  it("decodes entities in attributes, keeps the first of a repeated attribute, and collapses only \\s whitespace", () => {
    expect(htmlToText("<a href='/q?a=1&amp;b=&lt;2&gt;' HREF='/second'>amp</a> <img ALT='x &amp; y'>", "https://site.test/").text).toBe(
      "[amp](https://site.test/q?a=1&b=%3C2%3E) [image: x & y]",
    );
    expect(htmlToText("<p>nbsp&nbsp;and\u00a0raw \u2003em\u2003space  double\ttab</p><p>x</p>").text).toBe("nbsp and raw em space double tab\n\nx");
    // A lone em space is not collapsed (only tabs, newlines, NBSP and double spaces trigger collapsing).
    expect(htmlToText("<p>a\u2003b</p>").text).toBe("a\u2003b");
  });

  it("keeps text outside Latin-1 intact, in short and long documents", () => {
    expect(htmlToText("<h1>Ünïcödé — 日本語 😀</h1><p>wide <a href='/ü'>línk</a></p>", "https://site.test/").text).toBe(
      "# Ünïcödé — 日本語 😀\n\nwide [línk](https://site.test/%C3%BC)",
    );
    const long = Array.from({ length: 2000 }, (_, i) => `<p>日本 ${i}</p>`).join("");
    const text = htmlToText(long).text;
    expect(text.split("\n\n")).toHaveLength(2000);
    expect(text.endsWith("日本 1999")).toBe(true);
  });

  it("grows its output buffer when the text is longer than the HTML", () => {
    const base = "https://a-very-long-base-url.example.com/with/a/long/path/";
    const html = Array.from({ length: 3000 }, (_, i) => `<a href=${i}>${i}</a>`).join(" ");
    const { text } = htmlToText(html, base);
    expect(text.length).toBeGreaterThan(html.length);
    expect(text.startsWith(`[0](${base}0) [1](${base}1)`)).toBe(true);
    expect(text.endsWith(`[2999](${base}2999)`)).toBe(true);
  });
});
