#!/usr/bin/env bash
# CPU per candidate (the `cpu_s` signal: every process of its runs, measured by the parent) of
# two installs side by side, interleaved: e.g. the tree before a change and after it.
#   git worktree add /tmp/before <commit> && python3 -m venv /tmp/before-venv \
#     && /tmp/before-venv/bin/pip install -e /tmp/before
#   bash benchmarks/ab_cpu.sh /tmp/before-venv .venv [RUNS]
# Prints, per corpus task, the median cpu_s of each install and the ratio (second / first).
# A timing benchmark: run it on a quiet machine.
set -euo pipefail
first=$1 second=$2 runs=${3:-7}
corpus=$(cd "$(dirname "$0")/../tests/corpus" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for task in numbers roman parsing; do
  for _ in $(seq "$runs"); do
    for side in first second; do
      venv=${!side}
      "$venv/bin/scorewright" score "$corpus/$task/reference/solution.py" --tests "$corpus/$task/tests" \
        --heldout "$corpus/$task/heldout" --reference "$corpus/$task/reference" \
        --out "$out/$side.json" >/dev/null 2>&1
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], next(s['value'] for s in d['signals'] if s['name']=='cpu_s'))" \
        "$out/$side.json" "$task" "$side" >>"$out/figures"
    done
  done
done
python3 - "$out/figures" <<'PY'
import collections, statistics, sys
found = collections.defaultdict(list)
for line in open(sys.argv[1]):
    task, side, cpu = line.split()
    found[(task, side)].append(float(cpu))
for task in sorted({t for t, _ in found}):
    a, b = (statistics.median(found[(task, s)]) for s in ("first", "second"))
    print(f"{task:<10} first {a:.4f} s  second {b:.4f} s  ratio {b / a:.3f}")
PY
