#!/bin/bash
# Run each npm server (installed with `npm install <package>` in $I/<dir>) over stdio and save
# its tools/list to $RAW/<server>.json. Fake credentials, loopback URLs; listing calls no service.
HERE=$(cd "$(dirname "$0")" && pwd); RAW=${RAW:-/tmp/npm2/raw}; I=${I:-/tmp/npm2/i}; mkdir -p "$RAW"
export HOME=/tmp/fakehome DO_NOT_TRACK=1
grep -v '^#' "$HERE/npm_run.txt" | while IFS='|' read -r id dir pkg cmd envs; do
  [ -n "$ONLY" ] && [ "$ONLY" != "$id" ] && continue
  [ -z "$FORCE" ] && [ -s "$RAW/$id.json" ] && continue
  set -- $cmd; main="$I/$dir/node_modules/$pkg/$1"; shift
  echo "== $id $(node -p "require('$I/$dir/node_modules/$pkg/package.json').version" 2>/dev/null)"
  env $envs timeout 60 node "$HERE/mcp_list.mjs" "$RAW/$id.json" -- node "$main" "$@" 2>&1 </dev/null | tail -2
done
