#!/usr/bin/env bash
# Benchmark (not a test): the cost model against random search on the 12 heaviest distinct
# workloads of resnet18, mobilenet_v2 and transformer_encoder (kiln-bench-cost-model), then a
# plot of the best-so-far curves (bench/plot_cost_model.py).
#   bench/cost_model.sh [kiln-bench-cost-model options: --trials 256 --workloads 12 --threads 1
#                        --seed 1 --min-ms 50 --tolerance 0.01 --model-names a,b,c]
# Writes bench/.cost_model/curves.json, plot.png and report.txt (git-ignored).
# Environment: KILN_BUILD_DIR (default build) holds bin/kiln-bench-cost-model (built if missing);
# PYTHON (default /usr/bin/python3, Debian's) runs the plot.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${KILN_BUILD_DIR:-build}
BIN="$BUILD_DIR/bin/kiln-bench-cost-model"
OUT=bench/.cost_model

if [[ ! -x "$BIN" ]]; then
  echo "cost_model.sh: building kiln-bench-cost-model in $BUILD_DIR" >&2
  [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || cmake -S . -B "$BUILD_DIR" -G Ninja -DKILN_BUILD_SERVER=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target kiln-bench-cost-model >&2
fi
# Debian's python3-matplotlib belongs to Debian's interpreter (a python3 earlier on PATH, e.g.
# pyenv's, would not see it).
PYTHON=${PYTHON:-/usr/bin/python3}
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "cost_model.sh: installing python3-matplotlib (for the plot only)" >&2
  apt-get install -y python3-matplotlib >&2 || echo "cost_model.sh: no matplotlib, no plot" >&2
fi

mkdir -p "$OUT"
echo "bench/cost_model.sh $(date -u '+%Y-%m-%d %H:%M UTC')" | tee "$OUT/report.txt"
"$BIN" --models ../shared/models --json-out "$OUT/curves.json" "$@" | tee -a "$OUT/report.txt"
if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  "$PYTHON" bench/plot_cost_model.py "$OUT/curves.json" "$OUT/plot.png"
  echo "plot: $OUT/plot.png" | tee -a "$OUT/report.txt"
fi
