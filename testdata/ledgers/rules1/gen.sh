#!/bin/sh
# gen.sh writes the rules-1 fixture ledgers: a ledger recorded by govledger
# before decisions carried a rules version (commit 7c05825, the release the
# parse caps came after), exported as JSON Lines. They are kept, never
# regenerated: TestRules1Fixtures verifies them with today's code, so that
# every later change to formats or rules leaves existing ledgers verifying.
#
# Usage (from the repository root, with a govledger binary built at 7c05825):
#   sh testdata/ledgers/rules1/gen.sh /path/to/govledger-7c05825
set -eu
gl=$1
out=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gl" demo --keep "$work/fx" >/dev/null
cd "$work/fx"
man=registry/prompt-manifest.json
lock=registry-lock.json
gov=handoffs/01-product-to-analysis.json
# Hostile shapes, each far below --max-payload, recorded under rules 1 (no
# parse caps): dense JSON and YAML, many tiny keys, deep nesting, blank
# lines. Under later rules some of them hit a parse cap; their entries must
# still verify under the rules they were decided by.
python3 - "$gov" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def with_input(name, value, hid):
    d = json.loads(json.dumps(doc))
    d["handoff_id"] = hid
    d["context"]["input_data"] = value
    open("h-" + name + ".json", "w").write(json.dumps(d))
with_input("zeros", [0] * 20000, "0b1f0c8e-1d2a-4b3c-8d4e-5f6a7b8c9d01")
with_input("tinykeys", {"k%d" % i: 0 for i in range(6000)}, "0b1f0c8e-1d2a-4b3c-8d4e-5f6a7b8c9d02")
deep = 0
for _ in range(30):
    deep = [deep]
with_input("deep", deep, "0b1f0c8e-1d2a-4b3c-8d4e-5f6a7b8c9d03")
open("h-zeros-array.json", "w").write("[" + ",".join(["0"] * 20000) + "]")
PY
# swarm/2 with a dense YAML flow sequence in its insights.
{ cat handoffs/11-swarm-to-litpm.yaml; printf '  extra:\n    flow: [%s1]\n' "$(yes 1, | head -n 20000 | tr -d '\n')"; } >h-swarm-flow.yaml
# YAML flow sequence alone (no format).
printf 'handoff:\n  source:\n    skill: perspective-swarm\n  flow: [%s1]\n' "$(yes 1, | head -n 20000 | tr -d '\n')" >h-yaml-flow.yaml
# task/1 of blank lines.
{ yes '' | head -n 30000; cat handoffs/10-task-handoff.md; } >h-task-blank.md
# many tiny YAML keys.
{ cat handoffs/12-researcher-to-synthesizer.yaml; echo 'extra:'; i=0; while [ $i -lt 4000 ]; do echo "  k$i: 0"; i=$((i+1)); done; } >h-skill-keys.yaml
"$gl" --db demo.db --manifest skills --lock skills-lock.json record --root root h-swarm-flow.yaml h-yaml-flow.yaml h-skill-keys.yaml >/dev/null || true
"$gl" --db demo.db --manifest "$man" --lock "$lock" record h-zeros.json h-tinykeys.json h-deep.json h-zeros-array.json >/dev/null || true
"$gl" --db demo.db --manifest "$man" --lock "$lock" record --from orchestrator --to domain-04-content --root root h-task-blank.md >/dev/null || true
"$gl" --db demo.db verify >/dev/null
"$gl" --db demo.db export --out "$out/ledger.jsonl"

