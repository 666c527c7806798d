#!/usr/bin/env bash
# apply_patch throughput: `toolshed call apply_patch -` against Codex's own apply_patch, side by
# side in one run, on patchbench (200 files, 5,000 chunks). Prints each run and a comparison.
#
#   bench/patchbench.sh [ROUNDS] [RUNS_PER_ROUND]      (defaults: 4 rounds of 5 runs per tool)
#
# Environment:
#   PATCHBENCH         the patchbench directory (default: ../shared/bench/patchbench from the repo root)
#   CODEX_APPLY_PATCH  Codex's apply_patch (default: installs @openai/codex with npm into
#                      target/codex-npm and links its native binary as apply_patch)
#   VARIANTS=1         also time the crate's standalone example with each durability setting
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-4}"
runs="${2:-5}"
src="${PATCHBENCH:-$repo/../shared/bench/patchbench}"
[ -f "$src/bench.py" ] || { echo "patchbench not found at $src (set PATCHBENCH)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
(cd "$work" && python3 gen.py >/dev/null 2>&1)

if [ -z "${CODEX_APPLY_PATCH:-}" ]; then
  npmdir="$repo/target/codex-npm"
  if [ ! -d "$npmdir/node_modules/@openai/codex" ]; then
    mkdir -p "$npmdir"
    (cd "$npmdir" && npm init -y >/dev/null && npm install --silent @openai/codex >/dev/null)
  fi
  bin="$(find "$npmdir/node_modules/@openai" -path '*/bin/codex' -type f | head -1)"
  [ -n "$bin" ] || { echo "no native codex binary under $npmdir" >&2; exit 2; }
  mkdir -p "$npmdir/bin"
  ln -sf "$bin" "$npmdir/bin/apply_patch"
  CODEX_APPLY_PATCH="$npmdir/bin/apply_patch"
fi

(cd "$repo" && cargo build --release -q -p toolshed-cli --bin toolshed && cargo build --release -q -p toolshed-patch --example apply_patch)
toolshed="$repo/target/release/toolshed"
example="$repo/target/release/examples/apply_patch"

log="$work/log"
for ((r = 0; r < rounds; r++)); do
  python3 "$work/bench.py" --runs "$runs" -- "$toolshed" call apply_patch - | tee -a "$log" | grep SUMMARY | sed 's/^/toolshed /'
  python3 "$work/bench.py" --runs "$runs" -- "$CODEX_APPLY_PATCH" | tee -a "$log" | grep SUMMARY | sed 's/^/codex    /'
  if [ "${VARIANTS:-0}" = 1 ]; then
    for sync in fsync syncfs none; do
      python3 "$work/bench.py" --runs "$runs" -- env TOOLSHED_PATCH_SYNC=$sync "$example" | tee -a "$log" \
        | grep SUMMARY | sed "s/^/example-$sync /"
    done
  fi
done

python3 - "$log" "$toolshed" "$CODEX_APPLY_PATCH" <<'PY'
import json, statistics, sys
log, toolshed, codex = sys.argv[1:4]
rows, pending = {}, []
for line in open(log):
    line = line.strip()
    if line.startswith("{"):
        pending.append(json.loads(line))
    elif line.startswith("SUMMARY "):
        s = json.loads(line[8:])
        r = rows.setdefault(" ".join(s["cmd"]), {"runs": [], "ok": True})
        r["runs"] += pending
        r["ok"] = r["ok"] and s["all_correct"]
        pending = []

def stats(key):
    r = rows[key]["runs"]
    return statistics.median(x["wall_ms"] for x in r), max(x["maxrss_kb"] for x in r), len(r), rows[key]["ok"]

print(f"\n{'command':<60} {'runs':>4} {'median ms':>10} {'peak RSS MiB':>13} correct")
for key in rows:
    wall, rss, n, ok = stats(key)
    print(f"{key[-60:]:<60} {n:>4} {wall:>10.1f} {rss / 1024:>13.1f} {ok}")
t, c = stats(f"{toolshed} call apply_patch -"), stats(codex)
print(f"\ntoolshed/codex: wall time {t[0] / c[0]:.2f}x, peak memory {t[1] / c[1]:.2f}x")
PY
