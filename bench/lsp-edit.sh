#!/usr/bin/env bash
# What language-server diagnostics cost a one-shot `toolshed call`, side by side with hyperfine:
#
#   bench/lsp-edit.sh [RUNS]
#
# In two scratch worktrees, one with `[lsp.pyright]` pointing at the real pyright-langserver
# (installed from npm like the tests do) and one with `[lsp.pyright] enabled = false`, it times
#   - `call read` of a Python file (must cost the same: reads start no server), and
#   - `call write` of a Python file with a type error (starts pyright, waits for its first
#     diagnostics, shuts it down).
# Set TOOLSHED to use another binary (default: target/release/toolshed, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
bin=${TOOLSHED:-target/release/toolshed}
if [ ! -x "$bin" ]; then
  cargo build --release -p toolshed-cli >&2
fi
bin=$(realpath "$bin")
servers="${TOOLSHED_LSP_SERVERS:-${XDG_CACHE_HOME:-$HOME/.cache}/toolshed/lsp}"
pyright="$servers/node_modules/.bin/pyright-langserver"
if [ ! -x "$pyright" ]; then
  npm install --prefix "$servers" --no-audit --no-fund --loglevel=error pyright@1.1.414 >&2
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for wt in with without; do
  mkdir -p "$scratch/$wt/.git"
  printf 'def twice(n: int) -> int:\n    return 2 * n\n' > "$scratch/$wt/lib.py"
done
printf '[lsp.pyright]\ncommand = "%s"\n' "$pyright" > "$scratch/with/toolshed.toml"
printf '[lsp.pyright]\nenabled = false\n' > "$scratch/without/toolshed.toml"
# The scratch worktrees' toolshed.toml are the benchmark's own: applied without `toolshed trust`.
export TOOLSHED_DATA_DIR="$scratch/data" TOOLSHED_TRUST_PROJECT=1

read_args='{"file_path": "lib.py"}'
write_args='{"file_path": "main.py", "content": "from lib import twice\n\nlabel: str = twice(3)\n"}'
hyperfine --runs "$runs" --warmup 1 -N \
  -n "read, pyright configured" "$bin --root $scratch/with call read '$read_args'" \
  -n "read, no language server" "$bin --root $scratch/without call read '$read_args'"
hyperfine --runs "$runs" --warmup 1 \
  --prepare "rm -f $scratch/with/main.py $scratch/without/main.py" \
  -n "write with pyright diagnostics" "$bin --root $scratch/with call write '$write_args' > /dev/null" \
  -n "write, no language server" "$bin --root $scratch/without call write '$write_args' > /dev/null"
