import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../../src/base/clock.js";
import { ChunkThrottle, OutputCapture, renderCaptured } from "../../../../src/tools/shared/shell/output-capture.js";
import { utf16Length } from "../../../../src/tools/shared/text-view.js";

describe("utf16Length", () => {
  it("counts UTF-16 units of UTF-8 bytes without decoding", () => {
    for (const text of ["plain", "héllo wörld", "日本語", "emoji 😀 and 𝄞", ""]) {
      expect(utf16Length(Buffer.from(text))).toBe(text.length);
    }
  });
});

describe("OutputCapture", () => {
  it("keeps the first max chars, counts the rest, and renders the shared footer", () => {
    const capture = new OutputCapture(10);
    capture.push(Buffer.from("0123456"));
    capture.push(Buffer.from("789abc"));
    capture.push(Buffer.from("日本"));
    const captured = capture.finish();
    expect(captured).toEqual({ head: "0123456789", totalChars: 15, totalBytes: 19, truncated: true });
    expect(renderCaptured(captured, 10)).toBe(
      "0123456789\n\n[Output truncated: showing first 10 of 15 chars (5 more). Narrow the command or redirect to a file and read it with read_file.]",
    );
  });

  it("decodes characters split across chunks", () => {
    const bytes = Buffer.from("a€b");
    const capture = new OutputCapture(100);
    for (const b of bytes) capture.push(Buffer.from([b]));
    expect(renderCaptured(capture.finish())).toBe("a€b");
  });

  it("trims trailing newlines only when not truncated", () => {
    const capture = new OutputCapture(100);
    capture.push(Buffer.from("line\n\n"));
    expect(renderCaptured(capture.finish())).toBe("line");
  });
});

describe("ChunkThrottle", () => {
  it("coalesces writes per interval and stops after the notice", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const throttle = new ChunkThrottle((chunk) => sent.push(chunk), clock, 50);
    throttle.write("a");
    throttle.write("b");
    expect(sent).toEqual([]);
    await clock.advance(50);
    expect(sent).toEqual(["ab"]);
    throttle.write("c");
    throttle.stop("[stopped]");
    throttle.write("ignored");
    throttle.flush();
    await clock.advance(100);
    expect(sent).toEqual(["ab", "c[stopped]"]);
  });

  it("streams the kept head through the capture and says once that it stopped", () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const capture = new OutputCapture(5, new ChunkThrottle((chunk) => sent.push(chunk), clock));
    capture.push(Buffer.from("123"));
    capture.push(Buffer.from("456789"));
    capture.push(Buffer.from("more"));
    capture.finish();
    expect(sent.join("")).toBe("12345\n[live output stopped at 5 chars; the rest is counted, not streamed]\n");
  });
});
