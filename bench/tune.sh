#!/usr/bin/env bash
# Benchmark (not a test): what tuning buys. Tunes every model in ../shared/models on this machine
# at 1 and at 2 threads through kilnd (`kiln tune --server` against a kilnd with one compile
# worker and one measure worker owning that many cores; `--local` tunes in-process with
# `kiln tune --local` instead), a wall-time budget per model per thread count, prints tuning
# wall time and trials per model, then measures Kiln default, Kiln tuned and ONNX Runtime in one
# interleaved protocol (compare.sh --records-dir) and prints the table and the geometric mean of
# tuned/ORT over the models above 1 M multiply-adds.
#   bench/tune.sh [--budget-s S] [--trials N] [--only a,b] [--threads 1,2] [--seed S] [--random]
#                 [--compare-budget-ms MS] [--geomean-models a,b] [--compare-only] [--local]
# --budget-s: tuning wall time per model per thread count (default 60); --trials: at most this
#   many measured candidates per model per thread count (default 10000: the budget decides).
# --random: random search instead of the cost model. --compare-only: keep bench/.tune/ as it is
#   and only measure. Records go to bench/.tune/<model>.t<threads>.jsonl (git-ignored; replaced
#   on every tuning run; with kilnd: `kiln records export` of the measure worker's hardware key
#   after the model's tune), `kiln tune --json` output beside them, the report to
#   bench/.tune/report.txt. Each thread count gets a fresh kilnd data dir, bench/.tune/kilnd.t<N>,
#   so its cost model starts cold and warms up over the models, as a fleet's would.
# Environment: KILN_BUILD_DIR (default build) holds bin/kiln, bin/kilnd, bin/kiln-worker and
# bin/kiln-bench-model.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${KILN_BUILD_DIR:-build}
OUT=bench/.tune
budget_s=60
trials=10000
only=""
threads=1,2
seed=1
random=""
compare_budget_ms=8000
geomean="squeezenet1_1,mobilenet_v2,resnet18,transformer_encoder"
compare_only=0
local_tune=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget-s) budget_s=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --random) random=--random; shift ;;
    --compare-budget-ms) compare_budget_ms=$2; shift 2 ;;
    --geomean-models) geomean=$2; shift 2 ;;
    --compare-only) compare_only=1; shift ;;
    --local) local_tune=1; shift ;;
    *) echo "tune.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v node >/dev/null || { echo "tune.sh: node is required (apt-get install nodejs npm)" >&2; exit 1; }
need=(kiln kiln-bench-model)
[[ $local_tune -eq 0 ]] && need+=(kilnd kiln-worker)
for b in "${need[@]}"; do
  if [[ ! -x "$BUILD_DIR/bin/$b" ]]; then
    echo "tune.sh: building ${need[*]} in $BUILD_DIR" >&2
    [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || cmake -S . -B "$BUILD_DIR" -G Ninja -DKILN_BUILD_SERVER=ON >/dev/null
    cmake --build "$BUILD_DIR" -j2 --target "${need[@]}" >&2
    break
  fi
done

# kilnd for one thread count: a fresh data dir, one compile worker, one measure worker owning
# $1 cores. Sets KILND_PID and SERVER.
KILND_PID=""
stop_kilnd() {
  if [[ -n "$KILND_PID" ]]; then
    kill "$KILND_PID" 2>/dev/null || true
    wait "$KILND_PID" 2>/dev/null || true
    KILND_PID=""
  fi
}
trap stop_kilnd EXIT
start_kilnd() {
  local dir="$OUT/kilnd.t$1"
  rm -rf "$dir"
  mkdir -p "$dir"
  "$BUILD_DIR/bin/kilnd" --listen 127.0.0.1:0 --data-dir "$dir" --workers 1 \
    --measure-workers 1 --measure-cores "$1" 2> "$dir/kilnd.log" &
  KILND_PID=$!
  for _ in $(seq 1 600); do
    [[ -s "$dir/kilnd.port" ]] && break
    sleep 0.1
  done
  [[ -s "$dir/kilnd.port" ]] || { echo "tune.sh: kilnd did not start (see $dir/kilnd.log)" >&2; exit 1; }
  SERVER="127.0.0.1:$(cat "$dir/kilnd.port")"
  for _ in $(seq 1 600); do
    [[ $("$BUILD_DIR/bin/kiln" workers --server "$SERVER" | grep -c 'measure(') -ge 1 ]] && return
    sleep 0.1
  done
  echo "tune.sh: no measure worker registered (see $dir/kilnd.log)" >&2
  exit 1
}

mkdir -p "$OUT"
exec > >(tee "$OUT/report.txt") 2>&1

# The models in the order ort_bench.mjs benchmarks them (MANIFEST.tsv sizes, small to big).
only_arg=()
[[ -n "$only" ]] && only_arg=(--only "$only")
mapfile -t models < <(node bench/ort_bench.mjs --list-models --models ../shared/models "${only_arg[@]}")
IFS=, read -r -a thread_counts <<< "$threads"

echo "bench/tune.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# `--input-shape NAME=DIMS` for each graph input of model dir $1 with symbolic dims, from its
# test_data_set_0 (the shapes kiln-bench-model and compare.sh run it at); nothing for a static model.
shape_flags() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, onnx
d = sys.argv[1]
g = onnx.load(d + "/model.onnx", load_external_data=False).graph
init = {t.name for t in g.initializer}
inputs = [i for i in g.input if i.name not in init]
for n, i in enumerate(inputs):
    if all(x.HasField("dim_value") for x in i.type.tensor_type.shape.dim):
        continue
    t = onnx.TensorProto()
    t.ParseFromString(open(f"{d}/test_data_set_0/input_{n}.pb", "rb").read())
    print("--input-shape", i.name + "=" + ",".join(str(x) for x in t.dims))
PY
}

if [[ $compare_only -eq 0 ]]; then
  echo "tuning: budget ${budget_s} s and at most ${trials} trials per model per thread count, seed ${seed}${random:+, random search}"
  echo
  printf '%-24s %3s | %7s %7s %5s | %11s %11s %7s | %9s\n' model thr 'wall s' trials wkl \
    'est def ms' 'est tun ms' speedup MFLOP
  printf -- '-%.0s' {1..102}; echo
  for t in "${thread_counts[@]}"; do
    [[ $local_tune -eq 0 ]] && start_kilnd "$t"
    for m in "${models[@]}"; do
      rec="$OUT/$m.t$t.jsonl"
      rm -f "$rec"
      # shellcheck disable=SC2207
      shapes=($(shape_flags "../shared/models/$m"))
      start=$(date +%s.%N)
      set +e
      if [[ $local_tune -eq 1 ]]; then
        "$BUILD_DIR/bin/kiln" tune "../shared/models/$m/model.onnx" "${shapes[@]}" --local --records-out "$rec" \
          --threads "$t" --trials "$trials" --time-budget-s "$budget_s" --seed "$seed" $random --json \
          > "$OUT/$m.t$t.json" 2> "$OUT/$m.t$t.err"
        rc=$?
      else
        "$BUILD_DIR/bin/kiln" tune "../shared/models/$m/model.onnx" "${shapes[@]}" --server "$SERVER" \
          --trials "$trials" --time-budget-s "$budget_s" --seed "$seed" $random --json \
          > "$OUT/$m.t$t.json" 2> "$OUT/$m.t$t.err"
        rc=$?
        if [[ $rc -eq 0 ]]; then
          key=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).hardware_key)' "$OUT/$m.t$t.json")
          "$BUILD_DIR/bin/kiln" records export --server "$SERVER" --hardware-key "$key" > "$rec" 2>> "$OUT/$m.t$t.err"
          rc=$?
        fi
      fi
      set -e
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      if [[ $rc -ne 0 ]]; then
        printf '%-24s %3s | %7.1f  kiln tune failed: %s\n' "$m" "$t" "$wall" "$(tail -1 "$OUT/$m.t$t.err" | cut -c1-100)"
        continue
      fi
      node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const flops = r.workloads.reduce((a, w) => a + w.weight * w.flops, 0);
        const f = (x, d) => x.toFixed(d);
        const row = [process.argv[2].padEnd(24), process.argv[3].padStart(3), "|",
          f(Number(process.argv[4]), 1).padStart(7), String(r.trials).padStart(7),
          String(r.workloads.length).padStart(5), "|", f(r.default_estimated_ms, 4).padStart(11),
          f(r.estimated_ms, 4).padStart(11),
          (f(r.default_estimated_ms / r.estimated_ms, 2) + "x").padStart(7), "|",
          f(flops / 1e6, 2).padStart(9)];
        console.log(row.join(" "));' "$OUT/$m.t$t.json" "$m" "$t" "$wall"
    done
    stop_kilnd
  done
  echo "(est: the sum over kernels of their workload's median in isolation, as kiln tune measured it)"
  echo
fi

echo "load average before measuring: $(cut -d' ' -f1-3 /proc/loadavg)"
bench/compare.sh --records-dir "$OUT" --threads "$threads" --budget-ms "$compare_budget_ms" \
  --geomean-models "$geomean" ${only:+--only "$only"}
