#!/usr/bin/env bash
# Syscall fault injection for the record path (I/O errors, full disk, kills),
# in the way of Tessera's fault test: for every syscall in SYSCALLS, every
# fault in FAULTS and every call index 1..MAX_N, run one "govledger record"
# of two documents under strace with that single fault injected, then check:
#   - every document record acknowledged (printed "seq N entry H") is in the
#     ledger with that hash;
#   - govledger verify passes (exit 0), or the ledger is refused as corrupt
#     (never a crash, never a silent success on a broken chain).
# Needs strace. Usage: scripts/fault-inject.sh [MAX_N]
set -euo pipefail
MAX_N="${1:-8}"
SYSCALLS="fdatasync pwrite64"
FAULTS="error=EIO error=ENOSPC signal=KILL"
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/govledger" ./cmd/govledger
gl="$work/govledger"
"$gl" demo --keep "$work/demo" >/dev/null
base="$work/demo/demo.db"
reg=(--manifest "$work/demo/registry/prompt-manifest.json" --lock "$work/demo/registry-lock.json")
docs=("$work/demo/handoffs/02-thinker-to-technical.json" "$work/demo/handoffs/07-rogue-agent.json")
trials=0 acked=0 lost=0 bad=0
for sc in $SYSCALLS; do
  for fault in $FAULTS; do
    for n in $(seq 1 "$MAX_N"); do
      db="$work/t.db"
      cp "$base" "$db"
      out=$(strace -f -qq -o /dev/null -e trace="$sc" -e inject="$sc:$fault:when=$n" \
        "$gl" "${reg[@]}" --db "$db" record --max-age 0 --root "$work/demo/root" "${docs[@]}" 2>/dev/null || true)
      trials=$((trials + 1))
      # Every acknowledged entry must be present with its hash.
      while read -r seq hash; do
        acked=$((acked + 1))
        got=$("$gl" --db "$db" --output json show "$seq" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["hash"])' 2>/dev/null || true)
        if [ "$got" != "$hash" ]; then
          lost=$((lost + 1)); echo "LOST: $sc $fault when=$n seq $seq"
        fi
      done < <(printf '%s\n' "$out" | sed -n 's/.* seq \([0-9]*\) entry \([0-9a-f]*\)$/\1 \2/p')
      if ! "$gl" --db "$db" verify >/dev/null 2>&1; then
        code=$?
        bad=$((bad + 1)); echo "VERIFY FAILED ($code): $sc $fault when=$n"
      fi
    done
  done
done
echo "fault injection: $trials trials, $acked acknowledged entries checked, $lost lost, $bad verify failures"
[ "$lost" -eq 0 ] && [ "$bad" -eq 0 ]
