#!/usr/bin/env bash
# bench-lockcheck.sh: throughput of "govledger lock check" against sha256sum
# over the same 10,000 prompt files of 4 KiB, in one run, warm page cache.
#
# Usage: scripts/bench-lockcheck.sh [FILES] [REPS]
# Prints both throughputs (files/s, MB/s, best of REPS) and their ratio
# (govledger / sha256sum; the target is >= 0.7).
set -euo pipefail

files=${1:-10000}
reps=${2:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building govledger..."
(cd "$repo" && go build -o "$work/govledger" ./cmd/govledger)

echo "writing $files prompt files of 4 KiB..."
mkdir -p "$work/reg/prompts"
python3 - "$work/reg" "$files" <<'PY'
import json, os, sys
root, n = sys.argv[1], int(sys.argv[2])
agents = []
for i in range(n):
    d = f"prompts/{i % 100:02d}"
    os.makedirs(os.path.join(root, d), exist_ok=True)
    p = f"{d}/agent-{i:05d}.md"
    with open(os.path.join(root, p), "wb") as f:
        f.write(os.urandom(4096))
    agents.append({"agent_id": f"agent-{i:05d}", "agent_type": "domain",
                   "agent_version": "1.0.0", "prompt_path": p})
with open(os.path.join(root, "prompt-manifest.json"), "w") as f:
    json.dump({"manifest_version": 1, "agents": agents}, f)
with open(os.path.join(root, "files.txt"), "w") as f:
    f.write("\n".join(a["prompt_path"] for a in agents) + "\n")
PY

cd "$work/reg"
"$work/govledger" lock >/dev/null
# Warm the page cache.
xargs -a files.txt cat >/dev/null

now() { date +%s.%N; }
best() { # best wall time of $reps runs of "$@"
  local b=""
  for _ in $(seq "$reps"); do
    local t0 t1 d
    t0=$(now); "$@" >/dev/null; t1=$(now)
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$b" ] || [ "$(echo "$d < $b" | bc -l)" = 1 ]; then b=$d; fi
  done
  echo "$b"
}

gl=$(best "$work/govledger" lock check)
sh=$(best xargs -a files.txt sha256sum)
mb=$(echo "$files * 4096 / 1000000" | bc -l)
printf 'govledger lock check: %.3fs  %8.0f files/s  %7.1f MB/s  (whole command: load, validate, parse lock, hash)\n' \
  "$gl" "$(echo "$files / $gl" | bc -l)" "$(echo "$mb / $gl" | bc -l)"
printf 'sha256sum:            %.3fs  %8.0f files/s  %7.1f MB/s\n' \
  "$sh" "$(echo "$files / $sh" | bc -l)" "$(echo "$mb / $sh" | bc -l)"
printf 'ratio (govledger / sha256sum throughput): %.2f  (target >= 0.7)\n' "$(echo "$sh / $gl" | bc -l)"
