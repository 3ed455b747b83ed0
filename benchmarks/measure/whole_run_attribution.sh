#!/usr/bin/env bash
# Where the whole-run record's cost on a script comes from (issue 31; docs/benchmarks.md, "The whole-run record's
# cost"):
#   bash benchmarks/measure/whole_run_attribution.sh WORKDIR [ROUNDS]
# benchmarks/workloads/timed_script.py (2 Gloo ranks, 60 steps) six ways per round, in alternating order: under torchrun
# without and with a Python all-reduce comm hook of its own (--comm-hook allreduce: torch's allreduce_hook), and under
# `commprof run --` with the record off (--no-whole-run) and on, each without and with that hook. Per launch the median
# of steps 26-59; then the median over rounds of the paired ratios, with median_ci's 95% interval.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?WORKDIR}
rounds=${2:-8}
py=${PYTHON:-python3}
script=$repo/benchmarks/workloads/timed_script.py
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$work" && cd "$work"
: > times.txt
for ((r = 0; r < rounds; r++)); do
  ways="torchrun torchrun-hook off on off-hook on-hook"
  [ $((r % 2)) = 1 ] && ways="on-hook off-hook on off torchrun-hook torchrun"
  for way in $ways; do
    out=$PWD/$way-$r.json
    hook=(); [[ $way == *-hook ]] && hook=(--comm-hook allreduce)
    case $way in
      torchrun*) OMP_NUM_THREADS=1 "$py" -m torch.distributed.run --standalone --nproc-per-node 2 "$script" \
                   --steps 60 --out "$out" "${hook[@]}" ;;
      off*) "$py" -m commprof run --procs 2 --device cpu --run-id "$way-$r" --quiet --no-whole-run -- "$script" \
              --steps 60 --out "$out" "${hook[@]}" ;;
      on*) "$py" -m commprof run --procs 2 --device cpu --run-id "$way-$r" --quiet -- "$script" \
             --steps 60 --out "$out" "${hook[@]}" ;;
    esac > "$way-$r.log" 2>&1
    "$py" -c "import json, statistics as s, sys; print(*sys.argv[1:3], s.median(json.load(open(sys.argv[3]))[26:]))" \
      "$r" "$way" "$out" | tee -a times.txt
  done
done
"$py" - <<'PY'
import collections, statistics
from commprof.analysis.stats import median_ci
ms = collections.defaultdict(dict)
for line in open("times.txt"):
    r, way, value = line.split()
    ms[way][int(r)] = float(value)
for way, by_round in ms.items():
    print(f"{way}: {statistics.median(by_round.values()):.1f} ms per step")
for a, b in [("on", "off"), ("off-hook", "off"), ("on-hook", "off-hook"), ("on", "off-hook"),
             ("torchrun-hook", "torchrun"), ("off", "torchrun"), ("on", "torchrun")]:
    e = median_ci([ms[a][r] / ms[b][r] - 1 for r in ms[a]])
    print(f"{a} against {b}: {e.value:+.1%} [{e.low:+.1%}, {e.high:+.1%}]")
PY
