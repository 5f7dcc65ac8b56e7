#!/usr/bin/python3
"""Symbolic-batch copies of ../shared/models and their batch-4 inputs (scripts/make-symbolic-batch-refs).

prepare MODELS_DIR OUT_DIR NAME...: for each model, OUT_DIR/NAME/model.onnx with dim 0 of its
  graph input and outputs renamed to the dim_param "N" (value_info dropped, so shape inference
  recomputes it), and OUT_DIR/NAME/input.bin + input.json: the batch-4 input derived from
  test_data_set_0/input_0.pb x (batch 1) as [x, 0.5 * x, -x, x flipped along its last axis],
  exactly as tests/e2e/models_test.cc derives it (float32; every step is exact).
finish OUT_DIR DATA_DIR NAME...: OUT_DIR/NAME/output.bin + output.json (ONNX Runtime's output
  0, written by scripts/ort_reference.mjs) as DATA_DIR/NAME.b4.output_0.pb, a TensorProto named
  after the model's output.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def symbolic_copy(model):
    g = model.graph
    init = {t.name for t in g.initializer}
    for vi in list(g.input) + list(g.output):
        if vi.name in init:
            continue
        dim = vi.type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_param = "N"
    del g.value_info[:]
    return model


def batch4(x):
    return np.concatenate([x, np.float32(0.5) * x, -x, np.flip(x, axis=-1)], axis=0)


def prepare(models_dir, out_dir, names):
    for name in names:
        src = os.path.join(models_dir, name)
        dst = os.path.join(out_dir, name)
        os.makedirs(dst, exist_ok=True)
        model = symbolic_copy(onnx.load(os.path.join(src, "model.onnx")))
        onnx.save(model, os.path.join(dst, "model.onnx"))
        t = onnx.TensorProto()
        with open(os.path.join(src, "test_data_set_0", "input_0.pb"), "rb") as f:
            t.ParseFromString(f.read())
        x = batch4(numpy_helper.to_array(t).astype(np.float32))
        x.astype("<f4").tofile(os.path.join(dst, "input.bin"))
        with open(os.path.join(dst, "input.json"), "w") as f:
            json.dump({"name": model.graph.input[0].name, "dims": list(x.shape)}, f)


def finish(out_dir, data_dir, names):
    os.makedirs(data_dir, exist_ok=True)
    for name in names:
        src = os.path.join(out_dir, name)
        with open(os.path.join(src, "output.json")) as f:
            meta = json.load(f)
        y = np.fromfile(os.path.join(src, "output.bin"), dtype="<f4").reshape(meta["dims"])
        t = numpy_helper.from_array(y, meta["name"])
        with open(os.path.join(data_dir, name + ".b4.output_0.pb"), "wb") as f:
            f.write(t.SerializeToString())


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("prepare", "finish"):
        sys.exit(__doc__)
    (prepare if sys.argv[1] == "prepare" else finish)(sys.argv[2], sys.argv[3], sys.argv[4:])
