#!/usr/bin/env bash
# Prepares runtime_c_api_test's inputs in OUT_DIR (run from the repo root):
#   squeezenet.kiln        examples/squeezenet1_1 compiled for this host by `kiln compile`
#   squeezenet_spr.kiln    the same for cpu:sapphirerapids (AMX: a feature many hosts lack)
#   squeezenet_bdver4.kiln the same for cpu:bdver4 (AMD Excavator: XOP and FMA4, which no
#                          current x86-64 CPU has)
#   input_0.bin, output_0.bin   the stored input and PyTorch reference output as raw f32
#   scalar.kiln            tests/data/scalar_rate (y = x * float(sr), sr an i64 scalar) compiled
#                          for x f32[3]
# usage: prepare_test_data.sh BIN_DIR OUT_DIR
set -euo pipefail
bin=$1
out=$2
model=examples/squeezenet1_1
mkdir -p "$out"
"$bin/kiln" compile "$model/model.onnx" -o "$out/squeezenet.kiln"
"$bin/kiln" compile "$model/model.onnx" --target cpu:sapphirerapids -o "$out/squeezenet_spr.kiln"
"$bin/kiln" compile "$model/model.onnx" --target cpu:bdver4 -o "$out/squeezenet_bdver4.kiln"
/usr/bin/python3 - "$model/test_data_set_0" "$out" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
src, out = sys.argv[1], sys.argv[2]
for name in ("input_0", "output_0"):
    t = onnx.TensorProto()
    with open(f"{src}/{name}.pb", "rb") as f:
        t.ParseFromString(f.read())
    numpy_helper.to_array(t).astype("<f4").tofile(f"{out}/{name}.bin")
PY
"$bin/kiln" compile tests/data/scalar_rate/model.onnx --input-shape x=3 -o "$out/scalar.kiln"
