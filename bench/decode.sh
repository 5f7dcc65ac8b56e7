#!/usr/bin/env bash
# Benchmark (not a test): greedy decoding with a KV cache, Kiln vs ONNX Runtime, 1 and 2 threads.
# Kiln runs ../shared/models/llama_decoder_kv (or --model DIR) through one artifact compiled with
# symbolic dims; both runtimes run the same loop in their own process, alternating batches with
# the idle one frozen (ort_bench.mjs --decode). Prints the prompt latency, the decode step
# latency and tokens/s with Kiln/ORT ratios, then one step at each data set's shapes through the
# symbolic artifact, a per-shape compile and ORT (sym/shape, sym/ORT).
#   bench/decode.sh [--model DIR] [ort_bench.mjs options: --threads 1,2 --warmup 20 --runs 100
#                    --budget-ms 8000]
# Environment: KILN_BUILD_DIR (default build) holds bin/kiln-bench-model.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=../shared/models/llama_decoder_kv
if [[ "${1:-}" == "--model" ]]; then
  MODEL=$2
  shift 2
fi
BUILD_DIR=${KILN_BUILD_DIR:-build}
BIN="$BUILD_DIR/bin/kiln-bench-model"
source bench/ort_env.sh  # builds $BIN if missing, installs ONNX Runtime into $ORT_DIR

exec node bench/ort_bench.mjs --kiln-bin "$BIN" --ort-dir "$ORT_DIR" --decode "$MODEL" "$@"
