#!/usr/bin/python3
"""Dynamic int8 quantization of a float32 model's matrix products, as ONNX Runtime's
quantize_dynamic writes it (QOperator format, per-tensor weights), with python3-onnx and numpy
only.

dynamic_quantize.py MODEL.onnx OUT.onnx

Every MatMul whose B is a float32 initializer [K, N] becomes
  DynamicQuantizeLinear(A) -> (A_q uint8, A_scale, A_zero_point)
  MatMulInteger(A_q, B_q, A_zero_point, B_zero_point) -> int32
  Cast(to float) * (A_scale * B_scale)
with B quantized symmetrically to int8 per tensor: B_scale = max|B| / 127, B_q =
clip(round(B / B_scale), -127, 127), B_zero_point 0. The activations' scale and zero point are
computed per inference (DynamicQuantizeLinear: uint8, range widened to include 0). Everything
else stays float32. quantize_dynamic's default for transformer encoders (MatMul only).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize(src, dst):
    model = onnx.load(src)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    nodes, new_inits = [], []
    count = 0
    for n in g.node:
        b = inits.get(n.input[1]) if n.op_type == "MatMul" and len(n.input) == 2 else None
        if b is None or b.data_type != TensorProto.FLOAT or len(b.dims) != 2:
            nodes.append(n)
            continue
        w = numpy_helper.to_array(b).astype(np.float32)
        scale = np.float32(np.abs(w).max() / 127.0) or np.float32(1.0)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        p = f"{n.output[0]}_dyn{count}"
        count += 1
        new_inits += [numpy_helper.from_array(q, p + "_B_quantized"),
                      numpy_helper.from_array(np.array(scale, np.float32), p + "_B_scale"),
                      numpy_helper.from_array(np.array(0, np.int8), p + "_B_zero_point")]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [n.input[0]],
                             [p + "_A_q", p + "_A_scale", p + "_A_zero_point"], name=p + "_dql"),
            helper.make_node("MatMulInteger",
                             [p + "_A_q", p + "_B_quantized", p + "_A_zero_point",
                              p + "_B_zero_point"], [p + "_int32"], name=p + "_mmi"),
            helper.make_node("Cast", [p + "_int32"], [p + "_float"], to=TensorProto.FLOAT,
                             name=p + "_cast"),
            helper.make_node("Mul", [p + "_A_scale", p + "_B_scale"], [p + "_scale"],
                             name=p + "_scale_mul"),
            helper.make_node("Mul", [p + "_float", p + "_scale"], [n.output[0]],
                             name=p + "_mul"),
        ]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    print(f"{dst}: {count} MatMul quantized dynamically")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    quantize(sys.argv[1], sys.argv[2])
