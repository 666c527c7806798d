#!/bin/bash
# Run each PyPI server (installed in /tmp/py/v/<package> with `uv pip install <package>`) over stdio
# and save its tools/list to $RAW/<server>.json. Servers are pointed at loopback / fake credentials;
# listing tools does not call any service.
HERE=$(cd "$(dirname "$0")" && pwd); RAW=${RAW:-/tmp/py/raw}; V=${V:-/tmp/py/v}; mkdir -p "$RAW"
export HOME=/tmp/fakehome AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 FASTMCP_LOG_LEVEL=ERROR
grep -v '^#' "$HERE/py_run.txt" | while IFS='|' read -r id venv cmd envs; do
  [ -n "$ONLY" ] && [ "$ONLY" != "$id" ] && continue
  set -- $cmd; bin="$V/$venv/bin/$1"; shift
  echo "== $id"; env $envs timeout 90 node "$HERE/mcp_list.mjs" "$RAW/$id.json" -- "$bin" "$@" 2>&1 </dev/null | tail -2
done
