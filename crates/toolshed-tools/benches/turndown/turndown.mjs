// Times Turndown (OpenCode's HTML → Markdown converter, with OpenCode's options) on the page
// the `html` bench writes, for the side-by-side figure in docs/web.md.
// Usage: node turndown.mjs [FILE] [ITERATIONS]   (needs `npm install turndown`)
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import TurndownService from "turndown";

const file = process.argv[2] ?? join(tmpdir(), "toolshed-html-bench.html");
const iterations = Number(process.argv[3] ?? 10);
const html = readFileSync(file, "utf8");
const service = new TurndownService({
  headingStyle: "atx",
  hr: "---",
  bulletListMarker: "-",
  codeBlockStyle: "fenced",
  emDelimiter: "*",
});
service.remove(["script", "style", "meta", "link"]);
service.turndown(html); // warm-up
const times = [];
for (let i = 0; i < iterations; i++) {
  const start = process.hrtime.bigint();
  service.turndown(html);
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`turndown: ${(html.length / 1048576).toFixed(2)} MiB, median ${median.toFixed(0)} ms over ${iterations} runs`);
