#!/usr/bin/env bash
# Peak memory of `toolshed call bash` while a command prints a lot (default 500 MB).
#
#   bench/shell-rss.sh [BYTES] [LIMIT_MB]
#
# Runs `toolshed call bash '{"command":"yes ... | head -c BYTES"}' --yes --json` in a scratch
# worktree, measures the toolshed process's peak resident set (wait4's ru_maxrss), checks that
# the spill file holds every byte, and fails when the peak reaches LIMIT_MB (default 64).
# Set TOOLSHED to use another binary (default: target/release/toolshed, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

bytes=${1:-500000000}
limit_mb=${2:-64}
bin=${TOOLSHED:-target/release/toolshed}
if [ ! -x "$bin" ]; then
  cargo build --release -p toolshed-cli >&2
fi
bin=$(realpath "$bin")

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/wt/.git" "$scratch/data"

python3 - "$bin" "$scratch" "$bytes" "$limit_mb" <<'PY'
import json, os, subprocess, sys, time

bin, scratch, nbytes, limit_mb = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
line = "toolshed shell benchmark line: the quick brown fox jumps over the lazy dog 0123456789"
args = json.dumps({"command": f"yes '{line}' | head -c {nbytes}", "timeout_ms": 600000})
env = dict(os.environ, TOOLSHED_DATA_DIR=os.path.join(scratch, "data"))
started = time.monotonic()
proc = subprocess.Popen([bin, "--root", os.path.join(scratch, "wt"), "call", "bash", args, "--yes", "--json"],
                        stdout=subprocess.PIPE, env=env)
out = proc.stdout.read()
_, status, usage = os.wait4(proc.pid, 0)
wall = time.monotonic() - started
peak_mb = usage.ru_maxrss / 1024  # Linux reports KiB
result = json.loads(out)
spill = result["metadata"].get("output_path")
spilled = os.path.getsize(spill) if spill else 0
print(f"output: {nbytes / 1e6:.0f} MB printed, {spilled / 1e6:.0f} MB in the spill file, "
      f"{len(result['output'])} bytes shown to the model")
print(f"toolshed peak RSS: {peak_mb:.1f} MB (limit {limit_mb:.0f} MB); wall time {wall:.2f} s "
      f"({nbytes / 1e6 / wall:.0f} MB/s)")
ok = os.waitstatus_to_exitcode(status) == 0 and spilled == nbytes and "Exit code: 0" in result["output"]
if not ok:
    print("FAIL: the call did not complete as expected", file=sys.stderr)
    sys.exit(1)
if peak_mb >= limit_mb:
    print(f"FAIL: peak RSS {peak_mb:.1f} MB >= {limit_mb:.0f} MB", file=sys.stderr)
    sys.exit(1)
PY
