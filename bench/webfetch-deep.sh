#!/usr/bin/env bash
# Time and peak memory of `toolshed call webfetch` on deeply nested pages.
#
#   bench/webfetch-deep.sh
#
# Writes pages of 600, 10,000 and 200,000 nested `<div>`s (opened and closed), one of 1,000,000
# `<div>`s never closed (5.0 MB, just under webfetch's 5 MiB cap), one of 200,000 misnested
# `<b><div></b>x` (200,000 deep through HTML's adoption agency) and one paragraph of 600,000
# `<b>x</b>` (a run htmd merges, quadratic in its length unless merged beforehand),
# serves them with `python3 -m http.server` on 127.0.0.1, and fetches each as Markdown and as
# text, printing wall time, the toolshed process's peak RSS (wait4's ru_maxrss) and the notes of
# the result. Fails when a call is an error or crashes.
# Set TOOLSHED to use another binary (default: target/release/toolshed, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${TOOLSHED:-${CARGO_TARGET_DIR:-target}/release/toolshed}
if [ ! -x "$bin" ]; then
  cargo build --release -p toolshed-cli >&2
fi
bin=$(realpath "$bin")

scratch=$(mktemp -d)
mkdir -p "$scratch/wt/.git" "$scratch/data" "$scratch/www"
python3 - "$scratch/www" <<'PY'
import sys
www = sys.argv[1]
def write(name, body):
    with open(f"{www}/{name}", "w") as f:
        f.write(f"<!doctype html><html><head><title>Deep</title></head><body>{body}</body></html>")
for n in (600, 10_000, 200_000):
    write(f"nest-{n}.html", "<div>" * n + "<p>the inner text</p>" + "</div>" * n)
write("open-1000000.html", "<div>" * 1_000_000 + "<p>the inner text</p>")
write("tangled-200000.html", "<b><div></b>x" * 200_000)
write("siblings-600000.html", "<p>" + "<b>x</b>" * 600_000 + "</p>")
PY

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$scratch/www" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$scratch"' EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
  sleep 0.1
done

python3 - "$bin" "$scratch" "$port" <<'PY'
import json, os, subprocess, sys, time

bin, scratch, port = sys.argv[1], sys.argv[2], sys.argv[3]
env = dict(os.environ, TOOLSHED_DATA_DIR=os.path.join(scratch, "data"))
pages = ["nest-600.html", "nest-10000.html", "nest-200000.html", "open-1000000.html", "tangled-200000.html",
         "siblings-600000.html"]
failed = False
print(f"{'page':<22} {'format':<9} {'size':>8} {'wall':>8} {'peak RSS':>9}  notes")
for page in pages:
    size = os.path.getsize(os.path.join(scratch, "www", page))
    for fmt in ("markdown", "text"):
        args = json.dumps({"url": f"http://127.0.0.1:{port}/{page}", "format": fmt})
        started = time.monotonic()
        with open(os.path.join(scratch, "stderr"), "w+b") as errf:
            proc = subprocess.Popen([bin, "--root", os.path.join(scratch, "wt"), "call", "webfetch", args, "--yes", "--json"],
                                    stdout=subprocess.PIPE, stderr=errf, env=env)
            out = proc.stdout.read()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - started
            errf.seek(0)
            err = errf.read().decode(errors="replace")
        peak_mb = usage.ru_maxrss / 1024  # Linux reports KiB
        try:
            result = json.loads(out)
        except ValueError:
            print(f"{page:<22} {fmt:<9} FAIL exit status {os.waitstatus_to_exitcode(status)}: {err[-300:]}")
            failed = True
            continue
        notes = [l for l in result["output"].splitlines() if l.startswith("Note:")]
        has_text = "the inner text" in result["output"]
        print(f"{page:<22} {fmt:<9} {size / 1e6:>6.2f}MB {wall:>7.2f}s {peak_mb:>7.0f}MB  "
              f"{'inner text kept; ' if has_text else ''}{' '.join(notes)[:150]}")
        if result["is_error"]:
            failed = True
sys.exit(1 if failed else 0)
PY
