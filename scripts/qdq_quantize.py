#!/usr/bin/python3
"""Static int8 QDQ quantization of a float32 CNN, as ONNX Runtime's quantize_static writes it
(QuantFormat.QDQ, per-channel weights), with python3-onnx and numpy only.

points MODEL.onnx OUT.onnx: OUT.onnx is MODEL with every calibration point (below) added as a
  graph output, for an inference that records their ranges (scripts/ort_ranges.mjs).
quantize MODEL.onnx RANGES.json OUT.onnx: the QDQ model.
input INPUT.pb DIR: DIR/input.bin and DIR/input.json for scripts/ort_*.mjs.
output DIR OUT.pb: DIR/output.bin and output.json (scripts/ort_reference.mjs) as a TensorProto.

Calibration points: the activation input of every Conv and Gemm, and every Conv's output (its
Relu's output when a Relu is the Conv's only consumer). RANGES.json maps each point to
[min, max] (from one inference on the model's test input: the model is for checking that int8
inference matches ONNX Runtime's, not for accuracy).

Quantization (onnxruntime.quantization defaults for QDQ): activations uint8, asymmetric, the
range widened to include 0: scale = (max - min) / 255, zero_point = round(-min / scale);
weights int8, symmetric, per output channel: scale = max|w| / 127, zero_point 0; Conv and Gemm
biases int32 with scale = input scale * weight scale and zero point 0. Each activation point
gets QuantizeLinear -> DequantizeLinear; weights and biases are stored quantized behind a
DequantizeLinear. Everything else (Add, pooling, Flatten) stays float32 between them.
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def consumers(graph):
    out = {}
    for n in graph.node:
        for i in n.input:
            out.setdefault(i, []).append(n)
    return out


def points(model):
    g = model.graph
    users = consumers(g)
    pts = []
    for n in g.node:
        if n.op_type in ("Conv", "Gemm"):
            pts.append(n.input[0])
        if n.op_type == "Conv":
            out = n.output[0]
            after = users.get(out, [])
            if len(after) == 1 and after[0].op_type == "Relu":
                out = after[0].output[0]
            pts.append(out)
    seen, ordered = set(), []
    for p in pts:
        if p not in seen:
            seen.add(p)
            ordered.append(p)
    return ordered


def cmd_points(src, dst):
    model = onnx.load(src)
    existing = {o.name for o in model.graph.output}
    for p in points(model):
        if p not in existing:
            model.graph.output.append(helper.make_tensor_value_info(p, TensorProto.FLOAT, None))
    onnx.save(model, dst)


def activation_params(lo, hi):
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = int(np.clip(np.round(-lo / scale), 0, 255))
    return scale, np.uint8(zp)


def cmd_quantize(src, ranges_path, dst):
    model = onnx.load(src)
    g = model.graph
    ranges = json.load(open(ranges_path))
    inits = {t.name: t for t in g.initializer}
    new_nodes, new_inits = [], []
    act = {}  # point name -> (scale, zp, dequantized name)
    dequantized = {}  # dequantized name -> point name

    def qdq(name):
        if name in act:
            return act[name][2]
        if name in dequantized:  # already rewritten to a point's dequantized value
            return name
        scale, zp = activation_params(*ranges[name])
        s, z = name + "_scale", name + "_zero_point"
        new_inits.append(numpy_helper.from_array(np.array(scale, np.float32), s))
        new_inits.append(numpy_helper.from_array(np.array(zp, np.uint8), z))
        q, dq = name + "_quantized", name + "_dequantized"
        new_nodes.append(helper.make_node("QuantizeLinear", [name, s, z], [q], name=q))
        new_nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [dq], name=dq))
        act[name] = (scale, zp, dq)
        dequantized[dq] = name
        return dq

    def weight(name, axis):
        w = numpy_helper.to_array(inits[name]).astype(np.float32)
        moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        scale = (np.abs(moved).max(axis=1) / 127.0).astype(np.float32)
        scale[scale == 0] = 1.0
        bshape = [1] * w.ndim
        bshape[axis] = -1
        q = np.clip(np.round(w / scale.reshape(bshape)), -127, 127).astype(np.int8)
        qn, sn, zn, dq = name + "_quantized", name + "_scale", name + "_zero_point", name + "_dq"
        new_inits.extend([numpy_helper.from_array(q, qn), numpy_helper.from_array(scale, sn),
                      numpy_helper.from_array(np.zeros(len(scale), np.int8), zn)])
        new_nodes.append(helper.make_node("DequantizeLinear", [qn, sn, zn], [dq], name=dq,
                                          axis=axis))
        return dq, scale

    def bias(name, in_scale, w_scale):
        b = numpy_helper.to_array(inits[name]).astype(np.float32)
        scale = (np.float32(in_scale) * w_scale).astype(np.float32)
        q = np.round(b / scale).astype(np.int32)
        qn, sn, zn, dq = name + "_quantized", name + "_scale", name + "_zero_point", name + "_dq"
        new_inits.extend([numpy_helper.from_array(q, qn), numpy_helper.from_array(scale, sn),
                      numpy_helper.from_array(np.zeros(len(scale), np.int32), zn)])
        new_nodes.append(helper.make_node("DequantizeLinear", [qn, sn, zn], [dq], name=dq,
                                          axis=0))
        return dq

    pts = set(points(model))
    out_names = {o.name for o in g.output}
    for n in g.node:
        if n.op_type in ("Conv", "Gemm"):
            x = qdq(n.input[0])
            axis = 0 if n.op_type == "Conv" or any(
                a.name == "transB" and a.i == 1 for a in n.attribute) else 1
            w, w_scale = weight(n.input[1], axis)
            inputs = [x, w]
            if len(n.input) > 2 and n.input[2]:
                point = dequantized.get(x, n.input[0])
                inputs.append(bias(n.input[2], act[point][0], w_scale))
            del n.input[:]
            n.input.extend(inputs)
        new_nodes.append(n)
        for out in n.output:
            if out in pts and out not in out_names and n.op_type != "Gemm":
                # Quantize where it is produced; its consumers read the dequantized value.
                dq = qdq(out)
                for later in g.node:
                    if later is n:
                        continue
                    for i, name in enumerate(later.input):
                        if name == out:
                            later.input[i] = dq
    used = {i for node in new_nodes for i in node.input}
    kept = [t for t in g.initializer if t.name in used]
    del g.node[:]
    g.node.extend(new_nodes)
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    del g.value_info[:]
    model.producer_name = "kiln scripts/qdq_quantize.py"
    onnx.checker.check_model(model)
    onnx.save(model, dst)


def cmd_input(pb, d):
    t = onnx.load_tensor(pb)
    numpy_helper.to_array(t).astype("<f4").tofile(f"{d}/input.bin")
    json.dump({"name": t.name, "dims": list(t.dims)}, open(f"{d}/input.json", "w"))


def cmd_output(d, pb):
    meta = json.load(open(f"{d}/output.json"))
    y = np.fromfile(f"{d}/output.bin", "<f4").reshape(meta["dims"])
    onnx.save_tensor(numpy_helper.from_array(y, meta["name"]), pb)


if __name__ == "__main__":
    if sys.argv[1] == "input":
        cmd_input(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "output":
        cmd_output(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "points":
        cmd_points(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "quantize":
        cmd_quantize(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
