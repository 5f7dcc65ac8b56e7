#!/usr/bin/env bash
# Benchmark (not a test): Kiln vs ONNX Runtime on every model in ../shared/models, 1 and 2
# threads, median/p90 latency and ratio, plus Kiln's cold compile time per model.
#   bench/compare.sh [ort_bench.mjs options: --threads 1,2 --warmup 20 --runs 100
#                     --budget-ms 8000 --only mlp,resnet18 --models DIR]
# Environment: KILN_BUILD_DIR (default build) holds bin/kiln-bench-model; built there with
# cmake if missing. ONNX Runtime (npm onnxruntime-node@1.30.0, CPU library inside the package)
# is installed once into bench/.ort/ (git-ignored); nothing in the product depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${KILN_BUILD_DIR:-build}
BIN="$BUILD_DIR/bin/kiln-bench-model"
source bench/ort_env.sh  # builds $BIN if missing, installs ONNX Runtime into $ORT_DIR

# The int8 row: an int8 QDQ ResNet-18 made from ../shared/models/resnet18 with the calibration
# ranges of tests/data/resnet18_int8 (scripts/qdq_quantize.py), run by both on the same file
# (ORT with all graph optimizations, so its QDQ convolutions run as int8 QLinearConv kernels).
INT8_DIR=bench/.int8/resnet18_int8
if [[ ! -f "$INT8_DIR/model.onnx" ]]; then
  mkdir -p "$INT8_DIR/test_data_set_0"
  /usr/bin/python3 scripts/qdq_quantize.py quantize ../shared/models/resnet18/model.onnx \
    tests/data/resnet18_int8/ranges.json "$INT8_DIR/model.onnx"
  cp ../shared/models/resnet18/test_data_set_0/input_0.pb "$INT8_DIR/test_data_set_0/"
  cp tests/data/resnet18_int8/output_0.pb "$INT8_DIR/test_data_set_0/"
fi

# The dynamic int8 row: the transformer encoder quantized as ORT's quantize_dynamic does
# (scripts/dynamic_quantize.py: DynamicQuantizeLinear -> MatMulInteger), run by both on the same
# file (ORT fuses each pair into its DynamicQuantizeMatMul kernel).
DYN_DIR=bench/.int8/transformer_encoder_dynint8
if [[ ! -f "$DYN_DIR/model.onnx" ]]; then
  mkdir -p "$DYN_DIR/test_data_set_0"
  /usr/bin/python3 scripts/dynamic_quantize.py ../shared/models/transformer_encoder/model.onnx \
    "$DYN_DIR/model.onnx" >&2
  cp ../shared/models/transformer_encoder/test_data_set_0/input_0.pb "$DYN_DIR/test_data_set_0/"
  cp tests/data/transformer_encoder_dynint8/output_0.pb "$DYN_DIR/test_data_set_0/"
fi

# The control-flow rows: loops run at run time over compiled bodies (tests/data/runtime_loop: a
# while loop, 500 RNN steps, a run-time trip count, nested loops, a 600-step Scan), an If whose
# branches are such loops (tests/data/runtime_if), and unrolled If/Loop/Scan
# (tests/data/control_flow).
exec node bench/ort_bench.mjs --kiln-bin "$BIN" --ort-dir "$ORT_DIR" --models ../shared/models \
  --extra-model "$INT8_DIR" --extra-model "$DYN_DIR" --extra-model tests/data/runtime_loop \
  --extra-model tests/data/runtime_if --extra-model tests/data/control_flow "$@"
