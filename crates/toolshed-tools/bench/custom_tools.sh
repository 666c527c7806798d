#!/usr/bin/env bash
# Startup costs of custom tools, measured with hyperfine on the release binary:
#   listing with cached OpenCode specs vs. importing them afresh (--check), a manifest tool call
#   vs. running its command directly, a manifest call while an OpenCode file changed (must not
#   start the JS host), and an OpenCode tool call (host start + import + call).
# Usage: crates/toolshed-tools/bench/custom_tools.sh [RUNS]   (needs hyperfine, Bun and zod 4:
# the node_modules that .ci/run prepares, or $TOOLSHED_TEST_JS_MODULES)
set -euo pipefail
cd "$(dirname "$0")/../../.."
runs="${1:-30}"
modules="${TOOLSHED_TEST_JS_MODULES:-$HOME/.cache/toolshed-ci/node_modules}"
[ -x "$modules/.bin/bun" ] && [ -f "$modules/zod/package.json" ] || { echo "need Bun and zod in $modules (run .ci/run)"; exit 2; }
cargo build --release -q -p toolshed-cli
bin="$PWD/target/release/toolshed"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TOOLSHED_DATA_DIR="$work/data" XDG_CONFIG_HOME="$work/config" PATH="$modules/.bin:$PATH"
mkdir -p "$work/p/.toolshed/tools" "$work/p/.opencode/tools" "$TOOLSHED_DATA_DIR/custom-tools/node_modules"
ln -s "$modules/zod" "$TOOLSHED_DATA_DIR/custom-tools/node_modules/zod"
cd "$work/p"
cat > .toolshed/tools/hello.toml <<'TOML'
description = "Say hello."
command = ["sh", "-c", "cat >/dev/null; echo hello"]
TOML
cat > .opencode/tools/add.ts <<'TS'
import { tool } from "@opencode-ai/plugin"
export default tool({
  description: "Add two numbers.",
  args: { a: tool.schema.number(), b: tool.schema.number() },
  async execute(args) { return String(args.a + args.b) },
})
TS
"$bin" tools --check >/dev/null

hyperfine -N --warmup 3 --runs "$runs" --export-markdown "$work/results.md" \
  -n "tools (cached specs)" "$bin tools" \
  -n "tools --check (imports afresh)" "$bin tools --check" \
  -n "sh -c (the manifest's command alone)" "sh -c 'echo {} | (cat >/dev/null; echo hello)'" \
  -n "call hello (manifest)" "$bin call hello {} --yes" \
  -n "call add (OpenCode, Bun host)" "$bin call add '{\"a\":1,\"b\":2}' --yes"
hyperfine -N --runs "$runs" --prepare "touch $work/p/.opencode/tools/add.ts" \
  -n "call hello, add.ts changed" "$bin call hello {} --yes"
cat "$work/results.md"
