#!/usr/bin/env bash
# Whole-process benchmarks of the file tools, side by side with ripgrep, using hyperfine.
#
#   bench/fs-tools.sh            # all four benchmarks
#   bench/fs-tools.sh grep glob  # some of them (grep, glob, read, edit)
#
# Needs: a release build (cargo build --release -p toolshed-cli), hyperfine and ripgrep
# (apt-get install -y hyperfine ripgrep), python3. Settings (environment):
#   RUNS=5                   runs per command and round
#   ROUNDS=4                 hyperfine is run this many times, alternating the commands, and
#                            the medians are taken over all runs (fairer on a busy machine)
#   STDLIB=...               tree to search (default: python3's standard library)
#   GREP_PATTERN='def \w+\(self'   regex for the grep benchmark
#   GLOB_PATTERN='*.py'      glob for the glob benchmark
#   BIG_FILE_MB=1024         size of the generated file for the read benchmark
# Results (hyperfine JSON and a summary) go to target/bench-fs/.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
toolshed=${TOOLSHED:-$here/target/release/toolshed}
stdlib=${STDLIB:-$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')}
runs=${RUNS:-5}
rounds=${ROUNDS:-4}
grep_pattern=${GREP_PATTERN:-'def \w+\(self'}
glob_pattern=${GLOB_PATTERN:-'*.py'}
big_mb=${BIG_FILE_MB:-1024}
out=$here/target/bench-fs
mkdir -p "$out"
export TOOLSHED_DATA_DIR=$out/data
summary=$out/summary.txt
: >"$summary"
echo "$(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$summary"

[ -x "$toolshed" ] || { echo "build it first: cargo build --release -p toolshed-cli" >&2; exit 2; }
command -v hyperfine >/dev/null && command -v rg >/dev/null || { echo "apt-get install -y hyperfine ripgrep" >&2; exit 2; }

json() { python3 -c 'import json,sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' "$@"; }
# Medians over every run of every round, one per command in order, then each command's mean
# CPU time (user + system) over the rounds.
median() {
    python3 - "$@" <<'PY'
import json, statistics, sys
times, cpu = {}, {}
for path in sys.argv[1:]:
    for i, r in enumerate(json.load(open(path))["results"]):
        times.setdefault(i, []).extend(r["times"])
        cpu.setdefault(i, []).append(r["user"] + r["system"])
keys = sorted(times)
print(" ".join(["%.4f" % statistics.median(times[i]) for i in keys] + ["%.4f" % statistics.mean(cpu[i]) for i in keys]))
PY
}
# compare NAME HYPERFINE_ARGS... : runs hyperfine $rounds times and prints the medians.
compare() {
    local name=$1; shift
    local files=()
    for r in $(seq 1 "$rounds"); do
        hyperfine -N --runs "$runs" --export-json "$out/$name.$r.json" "$@" >/dev/null
        files+=("$out/$name.$r.json")
    done
    median "${files[@]}"
}
say() { echo "$*" | tee -a "$summary"; }
# One command line for hyperfine -N, each argument quoted.
cmd() { python3 -c 'import shlex,sys; print(" ".join(shlex.quote(a) for a in sys.argv[1:]))' "$@"; }

bench_grep() {
    local args; args=$(json pattern "$grep_pattern")
    local ours theirs
    ours=$("$toolshed" --root "$stdlib" call grep "$args" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["matches"])')
    theirs=$(rg --hidden --no-require-git -c "$grep_pattern" "$stdlib" | awk -F: '{s+=$NF} END {print s+0}')
    say "grep: pattern '$grep_pattern' over $stdlib: toolshed $ours matching lines, rg $theirs"
    read -r a b ca cb < <(compare grep --warmup 2 \
        -n "toolshed call grep" "$(cmd "$toolshed" --root "$stdlib" call grep "$args")" \
        -n "rg" "$(cmd rg --hidden --no-require-git -n "$grep_pattern" "$stdlib")")
    say "grep: median toolshed ${a}s, rg ${b}s, ratio $(python3 -c "print(round($a/$b, 2))")x; CPU (user+sys) toolshed ${ca}s, rg ${cb}s"
}

bench_glob() {
    local args; args=$(json pattern "$glob_pattern")
    local ours theirs
    ours=$("$toolshed" --root "$stdlib" call glob "$args" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["count"])')
    theirs=$(rg --files --hidden --no-require-git -g "$glob_pattern" "$stdlib" | wc -l)
    say "glob: pattern '$glob_pattern' over $stdlib: toolshed $ours files, rg $theirs"
    read -r a b ca cb < <(compare glob --warmup 2 \
        -n "toolshed call glob" "$(cmd "$toolshed" --root "$stdlib" call glob "$args")" \
        -n "rg --files -g" "$(cmd rg --files --hidden --no-require-git -g "$glob_pattern" "$stdlib")")
    say "glob: median toolshed ${a}s, rg ${b}s, ratio $(python3 -c "print(round($a/$b, 2))")x; CPU (user+sys) toolshed ${ca}s, rg ${cb}s"
}

bench_read() {
    local big=$out/big.txt lines=$(( big_mb * 1024 * 1024 / 64 ))
    if [ ! -f "$big" ] || [ "$(stat -c %s "$big")" -ne $(( lines * 64 )) ]; then
        echo "writing $big ($big_mb MiB, $lines lines of 64 bytes)..." >&2
        python3 - "$big" "$lines" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    chunk = 100_000
    for start in range(0, n, chunk):
        # 64 bytes a line: 12 digits, a space, 50 characters, a newline.
        f.write("".join("%012d %s\n" % (i, "the quick brown fox jumps over the lazy dog, again") for i in range(start, min(n, start + chunk))))
EOF
    fi
    local offset=$(( lines - 1999 ))
    local args; args=$(python3 -c "import json; print(json.dumps({'file_path': 'big.txt', 'offset': $offset, 'limit': 2000}))")
    read -r a ca < <(compare read --warmup 1 \
        -n "toolshed call read (last 2000 lines of $big_mb MiB)" "$(cmd "$toolshed" --root "$out" call read "$args")")
    local peak=0
    for _ in 1 2 3 4 5; do
        kb=$( { /usr/bin/time -f '%M' "$toolshed" --root "$out" call read "$args" >/dev/null; } 2>&1 | tail -n 1)
        [ "$kb" -gt "$peak" ] && peak=$kb
    done
    say "read: 2000-line window at the end of a $big_mb MiB file: median ${a}s (CPU ${ca}s), peak RSS $(( peak / 1024 )) MiB ($peak KiB)"
}

bench_edit() {
    local dir=$out/edit
    mkdir -p "$dir"
    python3 - "$dir/base.py" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(4000):
        f.write(f"class Handler{i}:\n    def handle(self, request):\n        value = request.get('k{i}')\n        return value\n\n")
EOF
    # old_string copied without the class's indentation: only the indentation matcher finds it.
    local args; args=$(python3 -c "
import json
old = 'def handle(self, request):\n    value = request.get(\'k3999\')\n    return value'
new = 'def handle(self, request):\n    value = request.get(\'k3999\', None)\n    return value'
print(json.dumps({'file_path': 'work.py', 'old_string': old, 'new_string': new}))")
    cp "$dir/base.py" "$dir/work.py"
    "$toolshed" --root "$dir" call edit "$args" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); assert not r["is_error"], r["output"]; print("edit strategy:", r["metadata"]["strategy"])' >&2
    read -r a ca < <(compare edit --warmup 2 --prepare "$(cmd cp "$dir/base.py" "$dir/work.py")" \
        -n "toolshed call edit (fuzzy, 20000 lines)" "$(cmd "$toolshed" --root "$dir" call edit "$args")")
    say "edit: fuzzy (indentation) match in a $(wc -l <"$dir/base.py")-line file, whole process: median ${a}s (CPU ${ca}s)"
}

for b in "${@:-grep glob read edit}"; do
    for name in $b; do "bench_$name"; done
done
echo "summary in $summary" >&2
