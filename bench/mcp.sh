#!/usr/bin/env bash
# MCP figures: `toolshed tools --format openai-chat` bytes with 300 MCP tools attached vs none,
# and the cold start of `toolshed mcp serve` to a tools/list answer (median of 20 runs).
# Run from the repository root: bash bench/mcp.sh
set -euo pipefail
cargo build ${PROFILE_FLAG:---release} -q -p toolshed-cli -p toolshed-mcp --bins
BIN=$PWD/target/${PROFILE_DIR:-release}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export XDG_CONFIG_HOME=$WORK/xdg TOOLSHED_DATA_DIR=$WORK/data TOOLSHED_TRUST_PROJECT=1
mkdir -p "$WORK/none" "$WORK/mcp"
cat > "$WORK/mcp/toolshed.toml" <<TOML
[mcp.svc]
command = "$BIN/mcp-fixture-server"
args = ["--tools", "293"]
TOML
none=$("$BIN/toolshed" --root "$WORK/none" tools --format openai-chat | wc -c)
with=$("$BIN/toolshed" --root "$WORK/mcp" tools --format openai-chat | wc -c)
all=$("$BIN/toolshed" --root "$WORK/mcp" tools --all --format json | python3 -c 'import json,sys; t=json.load(sys.stdin); print(sum(1 for x in t if x["source"].startswith("mcp:")), sum(x["bytes"] for x in t if x["source"].startswith("mcp:")))')
echo "openai-chat tools payload: ${none} bytes without MCP, ${with} bytes with 300 MCP tools attached (deferred); MCP tools and their definition bytes: ${all}"
python3 - "$BIN/toolshed" "$WORK/none" <<'PY'
import json, subprocess, sys, time, statistics
toolshed, root = sys.argv[1], sys.argv[2]
def once():
    start = time.perf_counter()
    p = subprocess.Popen([toolshed, "--root", root, "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    send = lambda m: (p.stdin.write((json.dumps(m) + "\n").encode()), p.stdin.flush())
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    p.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    answer = json.loads(p.stdout.readline())
    elapsed = time.perf_counter() - start
    assert answer["result"]["tools"], answer
    p.stdin.close(); p.wait()
    return elapsed * 1000
runs = sorted(once() for _ in range(20))
print(f"mcp serve cold start to tools/list answer: median {statistics.median(runs):.1f} ms, max {runs[-1]:.1f} ms (20 runs)")
PY
