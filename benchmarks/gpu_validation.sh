#!/usr/bin/env bash
# The GPU checks of issue 14 as commprof commands, for the lent GPU machine (one H100/H200):
#   bash benchmarks/gpu_validation.sh [WORKDIR]
# Each check prints what it shows (its last lines) and whether it exited 0; a summary comes last. Reports and
# gzipped traces go to $OUT when it is set (the device tool brings that folder back). See docs/gpu-validation.md.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/commprof-gpu-XXXX)}
mkdir -p "$work" && cd "$work"
py=${PYTHON:-python3}
commprof() { "$py" -m commprof "$@"; }
summary=()

finish() {  # the summary and $OUT's archives, however the script ends
  echo "=== summary (work folder: $work)"
  printf '%s\n' "${summary[@]}"
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    tar czf "$OUT/reports.tgz" reports ./*.log sweep-memory.csv whole-run/whole-run-results.json 2>/dev/null
    tar czf "$OUT/traces-ws1.tgz" traces/ws1-fp32 traces/gloo-gpu 2>/dev/null
  fi
}
trap finish EXIT
deadline=$((SECONDS + ${VALIDATION_BUDGET_S:-3600}))

# A check is stopped (exit 124) after CHECK_TIMEOUT seconds or when VALIDATION_BUDGET_S since the start have passed,
# so one hang cannot take a whole lease; the checks after the budget are skipped, and $OUT's archives still written.
check() {  # check NAME COMMAND...: run it, keep its output, print its last lines
  local name=$1; shift
  local left=$((deadline - SECONDS)) limit=${CHECK_TIMEOUT:-240}
  if [ "$left" -le 5 ]; then summary+=("$(printf '%-28s skipped (budget spent)' "$name")"); return; fi
  [ "$left" -lt "$limit" ] && limit=$left
  echo "=== $name: $*"
  [ "$1" = commprof ] && set -- "$py" -m commprof "${@:2}"  # timeout runs programs, not the shell function
  timeout -k 10 "$limit" "$@" > "$name.log" 2>&1
  local code=$?
  tail -n 15 "$name.log"
  summary+=("$(printf '%-28s exit %s' "$name" "$code")")
}

"$py" - <<'PY'
import torch, torch.distributed as dist
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
      ".".join(map(str, torch.cuda.nccl.version())) if dist.is_nccl_available() else None)
for i in range(torch.cuda.device_count()):
    print(f"gpu {i}:", torch.cuda.get_device_name(i), f"{torch.cuda.get_device_properties(i).total_memory / 2**30:.0f} GiB")
PY
gpus=$("$py" -c "import torch; print(torch.cuda.device_count())")
run=(--steps 20 --quiet)

# NCCL with one rank: no all-reduce kernel; fp32, then bf16 autocast with the bf16 compression hook
check nccl-ws1-fp32 commprof run --gpus 1 --run-id ws1-fp32 "${run[@]}"
check nccl-ws1-bf16 commprof run --gpus 1 --precision bf16 --comm-hook bf16 --run-id ws1-bf16 "${run[@]}"
commprof report reports/ws1-fp32 --format md | head -30
# Gloo moving CUDA tensors through the host: its ranges must count as communication
check gloo-on-gpu commprof run --gpus 1 --backend gloo --run-id gloo-gpu "${run[@]}"
commprof report reports/gloo-gpu --quiet
check compare-nccl-gloo commprof compare --backends nccl,gloo --gpus 1 --run-id cmp "${run[@]}"
# scale's first size on NCCL (a computation-only profile, no crash); two sizes where there are two GPUs
if [ "$gpus" -ge 2 ]; then
  check scale commprof scale --world-sizes 1,2 --repeats 1 --run-id sc --quiet
else
  check scale-ws1-profile "$py" -c "
from pathlib import Path
from commprof.analysis.predict import step_profile
from commprof.trace.load import load_run
print(step_profile(load_run([Path('traces/ws1-fp32')], workers=1)))"
fi
# a 1.07B-parameter model, 5 settings: more than fits at once; GPU memory sampled every 0.5 s
nvidia-smi --query-gpu=timestamp,memory.used,memory.total --format=csv -lms 500 > sweep-memory.csv 2>/dev/null &
sampler=$!
check sweep-1b commprof sweep --bucket-cap-mb 10,25,50,100,200 --model "$repo/benchmarks/workloads/big_mlp.py:build" --gpus 1 \
  --batch-size 8 --repeats 2 --steps-per-repeat 2 --warmup-steps 2 --profile-steps 2 --run-id sweep-1b --quiet
kill "$sampler" 2>/dev/null
"$py" -c "
import csv, json
rows = list(csv.reader(open('sweep-memory.csv')))[1:]
used = [int(r[1].split()[0]) for r in rows if len(r) > 2]
print(f'GPU memory during the sweep: peak {max(used, default=0)} MiB of {rows[0][2].strip() if rows else \"?\"}')
print('most live settings:', json.load(open('traces/sweep-1b/sweep.json'))['timings'].get('most_live_settings'))" \
  || true
check backends commprof backends --timeout 60
check bench commprof bench --ops all_reduce,all_gather,reduce_scatter --backend nccl,gloo --min-bytes 1K --max-bytes 1G \
  --name bench-gpu --quiet
commprof report reports/bench-gpu --format md | head -40
# Holistic Trace Analysis on the NCCL trace, when it is installed here
"$py" - <<'PY' || true
try:
    from hta.trace_analysis import TraceAnalysis
except ImportError:
    print("HTA: not installed here")
else:
    analysis = TraceAnalysis(trace_dir="traces/ws1-fp32")
    print(analysis.get_temporal_breakdown(visualize=False))
PY
# the whole-run record's cost (issue 31): commprof run with it against --no-whole-run, interleaved, on one GPU
# (--gpus 1: with one rank DDP still calls the timed comm hook, so the recorder's CUDA events are paid); goal 1%
check whole-run-cost "$py" "$repo/benchmarks/measure/bench_whole_run.py" --workdir whole-run --device cuda --rounds "${WHOLE_RUN_ROUNDS:-4}"

