// toolshed's host for OpenCode-style tool files (`.opencode/tools/*.{ts,js}`).
//
// One long-lived process per toolshed process, started on first need. It imports tool
// modules, converts their zod arguments to JSON Schema and runs `execute` on request.
// Protocol: one JSON object per line, requests on stdin, replies on stdout (tool code that
// prints is redirected to stderr).
//
//   -> {"type":"load","id":1,"file":"/abs/x.ts","stem":"x"}
//   <- {"type":"loaded","id":1,"tools":[{"name","export","description","parameters"}],"problems":[{"export","message"}]}
//      {"type":"loaded","id":1,"error":{"message","line"}}
//   -> {"type":"call","id":2,"file":..,"stem":..,"export":"default","args":{..},"context":{..}}
//   <- {"type":"ask","id":2,"ask":1,"request":{"permission","patterns","always","metadata"}}
//   -> {"type":"answer","id":2,"ask":1,"error":null}
//   <- {"type":"metadata","id":2,"title":..,"metadata":{..}}
//   <- {"type":"result","id":2,"output":"..","title":..,"metadata":{..},"attachments":[..]} | {"type":"result","id":2,"error":".."}
//   -> {"type":"cancel","id":2}
//
// argv[2] is the directory whose node_modules holds zod 4 and toolshed's `@opencode-ai/plugin`
// stand-in; they are used only for files whose project does not provide those packages.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const DEPS = process.argv[2];
const DEPS_MODULES = join(DEPS, "node_modules");
const BRIDGED = { "@opencode-ai/plugin": "@opencode-ai/plugin", "@opencode-ai/plugin/tool": "@opencode-ai/plugin", zod: "zod" };

const protocolWrite = process.stdout.write.bind(process.stdout);
// Each message starts with a record separator (JSON escapes that character, so it starts
// nothing else): a process a tool starts with its output inherited writes into this stream
// too, maybe without a newline, and what precedes the separator is that output, not ours.
const send = (message) => protocolWrite("\x1e" + JSON.stringify(message) + "\n");
for (const level of ["log", "info", "debug", "trace", "dir", "table"]) console[level] = console.error.bind(console);
process.stdout.write = process.stderr.write.bind(process.stderr);

/** The directory of package `name` as seen from `dir` (node_modules lookup upwards), or null. */
function findPackage(name, dir) {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dirname(d) === d) return null;
  }
}

/** The ESM entry file of the package in `pkgDir`. */
function packageEntry(pkgDir) {
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  let entry = pkg.exports?.["."] ?? pkg.exports;
  while (entry && typeof entry === "object") entry = entry.import ?? entry.default ?? entry.node;
  return join(pkgDir, typeof entry === "string" ? entry : pkg.module ?? pkg.main ?? "index.js");
}

const fallbackUrl = (name) => {
  const dir = join(DEPS_MODULES, name);
  if (!existsSync(join(dir, "package.json"))) throw new Error(`${name} is not installed in ${DEPS_MODULES}`);
  return pathToFileURL(packageEntry(dir)).href;
};

// Bare imports of the bridged packages fall back to the copies in DEPS when the tool's own
// project lacks them. Bun: virtual modules, registered the first time a file needs them.
// Node: a resolve hook that retries failed lookups from DEPS.
const bunBridged = new Set();
if (typeof Bun === "undefined") {
  const { register } = await import("node:module");
  const hooks = `
    let parentURL;
    export async function initialize(data) { parentURL = data.parentURL; }
    export async function resolve(specifier, context, next) {
      try { return await next(specifier, context); }
      catch (error) {
        if (/^(zod|@opencode-ai\\/plugin)(\\/|$)/.test(specifier)) return next(specifier, { ...context, parentURL });
        throw error;
      }
    }`;
  register("data:text/javascript," + encodeURIComponent(hooks), {
    data: { parentURL: pathToFileURL(join(DEPS, "host-parent.mjs")).href },
  });
}

function bridgeFor(file) {
  if (typeof Bun === "undefined") return;
  for (const [specifier, name] of Object.entries(BRIDGED)) {
    if (bunBridged.has(specifier) || findPackage(name, dirname(file))) continue;
    bunBridged.add(specifier);
    Bun.plugin({
      name: `toolshed:${specifier}`,
      setup(build) {
        build.module(specifier, async () => ({ exports: await import(fallbackUrl(name)), loader: "object" }));
      },
    });
  }
}

/** The zod a file's tools are built with: the `tool.schema` of the plugin the file imports. */
async function zodFor(file) {
  const own = findPackage("@opencode-ai/plugin", dirname(file));
  try {
    const plugin = await import(own ? pathToFileURL(packageEntry(own)).href : fallbackUrl("@opencode-ai/plugin"));
    if (plugin.tool?.schema?.toJSONSchema) return plugin.tool.schema;
  } catch {}
  const zod = await import(fallbackUrl("zod"));
  return zod.z ?? zod.default ?? zod;
}

const SAFE_INTEGER_BOUNDS = [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];

/** Drops what zod adds to every integer (the safe-integer bounds): it costs context and says nothing. */
function tidy(schema) {
  if (Array.isArray(schema)) return schema.map(tidy);
  if (schema === null || typeof schema !== "object") return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) out[key] = tidy(value);
  if (out.type === "integer" && out.minimum === SAFE_INTEGER_BOUNDS[0] && out.maximum === SAFE_INTEGER_BOUNDS[1]) {
    delete out.minimum;
    delete out.maximum;
  } else if (out.type === "integer") {
    if (out.minimum === SAFE_INTEGER_BOUNDS[0]) delete out.minimum;
    if (out.maximum === SAFE_INTEGER_BOUNDS[1]) delete out.maximum;
  }
  return out;
}

const looksLikeTool = (v) =>
  v !== null && typeof v === "object" && "args" in v && "description" in v && typeof v.execute === "function";

const TOOL_KEYS = ["description", "args", "execute"];

/** An export meant as a tool that lacks part of one (two of `description`, `args`, `execute`);
 *  other exports (helper functions, constants) are not tools, and OpenCode ignores them. */
const almostTool = (v) =>
  v !== null && typeof v === "object" && !looksLikeTool(v) && TOOL_KEYS.filter((k) => k in v).length >= 2;

const isZod = (a) => a !== null && typeof a === "object" && ("_zod" in a || "_def" in a);

/** Imports `file` (fresh when it changed) and describes each tool it exports. */
async function load(file, stem) {
  bridgeFor(file);
  const url = pathToFileURL(file).href + "?mtime=" + statSync(file).mtimeMs;
  const mod = await import(url);
  const tools = [];
  const problems = [];
  let zod = null;
  for (const [exportName, value] of Object.entries(mod)) {
    const name = exportName === "default" ? stem : `${stem}_${exportName}`;
    if (almostTool(value)) {
      const missing = TOOL_KEYS.filter((k) => !(k in value) || (k === "execute" && typeof value[k] !== "function"));
      problems.push({
        export: exportName,
        message: `${name}: looks like a tool but has no ${missing.map((k) => "`" + k + "`").join(" or ")}${missing.includes("execute") ? " function" : ""}; a tool is tool({ description, args, execute })`,
      });
      continue;
    }
    if (!looksLikeTool(value)) continue;
    try {
      if (typeof value.description !== "string") throw new Error("`description` must be a string");
      const args = value.args ?? {};
      if (typeof args !== "object") throw new Error("`args` must be a plain object of zod schemas");
      if (isZod(args)) {
        throw new Error(
          "`args` is a zod schema (such as z.object({...})); pass a plain object of zod schemas instead, e.g. args: { path: tool.schema.string() }",
        );
      }
      const values = Object.values(args);
      let parameters;
      let z = null;
      if (values.every((a) => a !== null && typeof a === "object" && "_zod" in a)) {
        z = zod ??= await zodFor(file);
        parameters = tidy(z.toJSONSchema(z.object(args), { io: "input", unrepresentable: "any" }));
        delete parameters.$schema;
      } else if (values.some((a) => a && typeof a === "object" && ("_def" in a || "_zod" in a))) {
        throw new Error("`args` mixes zod schemas with other values, or uses zod 3; use zod 4 (`tool.schema`) for every argument");
      } else {
        parameters = { type: "object", properties: args, required: Object.keys(args) };
      }
      tools.push({ name, export: exportName, description: value.description, parameters, def: value, z });
    } catch (error) {
      problems.push({ export: exportName, message: `${name}: ${error?.message ?? error}` });
    }
  }
  // Module namespaces list exports alphabetically; the default export (the file's own name) comes first.
  const rank = (t) => (t.export === "default" ? 0 : 1);
  tools.sort((a, b) => rank(a) - rank(b));
  return { tools, problems };
}

const loaded = new Map();

async function tool(file, stem, exportName) {
  const mtime = statSync(file).mtimeMs;
  let entry = loaded.get(file);
  if (!entry || entry.mtime !== mtime) {
    entry = { mtime, result: await load(file, stem) };
    loaded.set(file, entry);
  }
  const found = entry.result.tools.find((t) => t.export === exportName);
  if (!found) throw new Error(`${file} no longer exports a tool named \`${exportName}\``);
  return found;
}

function errorLine(error, file) {
  const position = error?.position ?? error?.errors?.[0]?.position;
  if (position?.line) return position.line;
  const stack = String(error?.stack ?? "");
  for (const where of [file, pathToFileURL(file).href]) {
    const escaped = where.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const match = stack.match(new RegExp(escaped + "(?:\\?[^:\\s]*)?:(\\d+)"));
    if (match) return Number(match[1]);
  }
  if (typeof Bun === "undefined" && error?.name === "SyntaxError" && file.endsWith(".js")) {
    // Node does not say where an ES module's syntax error is; its syntax check does.
    const check = spawnSync(process.execPath, ["--input-type=module", "--check"], { input: readFileSync(file) });
    const match = String(check.stderr).match(/\[stdin\]:(\d+)/);
    if (match) return Number(match[1]);
  }
  return null;
}

function describe(error) {
  if (Array.isArray(error?.errors) && error.errors.length > 0) {
    return error.errors
      .slice(0, 3)
      .map((e) => (e?.position?.line ? `line ${e.position.line}: ` : "") + describe(e))
      .join("; ");
  }
  if (error?.position || error?.name === "Error") return String(error.message);
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error?.message ?? error);
}

const calls = new Map();

async function call(message) {
  const { id, file, stem, export: exportName, args, context } = message;
  const controller = new AbortController();
  const asks = new Map();
  let nextAsk = 0;
  calls.set(id, { controller, asks });
  try {
    const t = await tool(file, stem, exportName);
    let input = args;
    if (t.z) {
      const parsed = t.z.object(t.def.args).safeParse(args);
      if (!parsed.success) {
        const detail = t.z.prettifyError ? t.z.prettifyError(parsed.error) : parsed.error.message;
        throw new Error(
          `The ${t.name} tool was called with invalid arguments: ${detail}.\nPlease rewrite the input so it satisfies the expected schema.`,
        );
      }
      input = parsed.data;
    }
    const ctx = {
      sessionID: context.sessionID,
      messageID: context.messageID,
      callID: context.callID,
      agent: context.agent,
      directory: context.directory,
      worktree: context.worktree,
      abort: controller.signal,
      extra: {},
      messages: [],
      metadata(update) {
        const title = typeof update?.title === "string" ? update.title.slice(0, 1000) : null;
        send({ type: "metadata", id, title, metadata: boundedMetadata(update?.metadata) });
      },
      ask(request) {
        return new Promise((resolve, reject) => {
          const ask = ++nextAsk;
          asks.set(ask, { resolve, reject });
          send({ type: "ask", id, ask, request });
        });
      },
    };
    const result = await t.def.execute(input, ctx);
    send({ type: "result", id, ...normalise(result) });
  } catch (error) {
    send({ type: "result", id, error: bounded(describe(error)) });
  } finally {
    calls.delete(id);
  }
}

// The most of a result's text sent to toolshed (UTF-16 units): its first and last halves, with
// a line saying how much was left out between them, as toolshed's own spill files keep output.
// toolshed shows the model 50 KiB of it and keeps the rest in a file; a result of hundreds of
// megabytes would otherwise be held whole, several times over, on both sides of the pipe.
const MAX_OUTPUT = 16 * 1024 * 1024;
// The most of a result's metadata, as JSON, sent along; more is replaced by a note.
const MAX_METADATA = 1024 * 1024;

function bounded(text) {
  if (text.length <= MAX_OUTPUT) return text;
  const half = MAX_OUTPUT / 2;
  const left = text.length - 2 * half;
  return `${text.slice(0, half)}\n[... ${left} characters of this tool's output left out ...]\n${text.slice(text.length - half)}`;
}

function boundedMetadata(metadata) {
  if (!metadata || typeof metadata !== "object") return null;
  let size;
  try {
    size = JSON.stringify(metadata).length;
  } catch {
    return null;
  }
  return size <= MAX_METADATA ? metadata : { omitted: `metadata of ${size} characters left out` };
}

function normalise(result) {
  if (typeof result === "string") return { output: bounded(result) };
  if (result === undefined || result === null) return { output: "" };
  if (typeof result === "object" && typeof result.output === "string") {
    return {
      output: bounded(result.output),
      title: typeof result.title === "string" ? result.title.slice(0, 1000) : null,
      metadata: boundedMetadata(result.metadata),
      attachments: Array.isArray(result.attachments) ? result.attachments : [],
    };
  }
  return { output: bounded(typeof result === "object" ? JSON.stringify(result) : String(result)) };
}

async function handle(message) {
  switch (message.type) {
    case "load":
      try {
        const { tools, problems } = await load(message.file, message.stem);
        loaded.set(message.file, { mtime: statSync(message.file).mtimeMs, result: { tools, problems } });
        const described = tools.map(({ name, export: e, description, parameters }) => ({ name, export: e, description, parameters }));
        send({ type: "loaded", id: message.id, tools: described, problems });
      } catch (error) {
        send({ type: "loaded", id: message.id, error: { message: describe(error), line: errorLine(error, message.file) } });
      }
      break;
    case "call":
      await call(message);
      break;
    case "answer": {
      const pending = calls.get(message.id)?.asks.get(message.ask);
      if (!pending) break;
      calls.get(message.id).asks.delete(message.ask);
      if (message.error == null) pending.resolve();
      else pending.reject(new Error(message.error));
      break;
    }
    case "cancel":
      calls.get(message.id)?.controller.abort(new Error("The call was cancelled."));
      break;
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    console.error(`toolshed host: ignoring a line that is not JSON: ${line.slice(0, 200)}`);
    return;
  }
  handle(message).catch((error) => console.error("toolshed host:", error));
});
lines.on("close", () => process.exit(0));
process.on("unhandledRejection", (error) => console.error("toolshed host: unhandled rejection:", error));
send({ type: "ready", runtime: typeof Bun === "undefined" ? `node ${process.version}` : `bun ${Bun.version}` });
