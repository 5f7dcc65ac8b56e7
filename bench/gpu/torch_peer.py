#!/usr/bin/env python3
"""PyTorch peers of Kiln's GPU benchmark, run on the device machine (tests/device/run.sh, part c):
each model of ../shared/models rebuilt in PyTorch (the same architecture; latency does not depend
on the weights' values) timed eager and under torch.compile on cuda:0 at the models' input
shapes, and torch.matmul (cuBLAS) at the GEMM shapes of tests/device/prepare.sh. One JSON line
per measurement on stdout: median of REPEATS runs timed with CUDA events after warm-up, fp32
with TF32 off (Kiln's default precision)."""
import json
import statistics
import sys

import torch
import torch.nn as nn

REPEATS, WARMUP = 100, 20


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10), nn.Softmax(dim=1))


def transformer():
    layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def vision(name):
    import torchvision
    return getattr(torchvision.models, name)(weights=None)


# Model name in ../shared/models -> (builder, input shape).
MODELS = {
    "lenet": (lenet, (1, 1, 28, 28)),
    "mlp": (mlp, (1, 784)),
    "squeezenet1_1": (lambda: vision("squeezenet1_1"), (1, 3, 224, 224)),
    "resnet18": (lambda: vision("resnet18"), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: vision("mobilenet_v2"), (1, 3, 224, 224)),
    "transformer_encoder": (transformer, (1, 64, 256)),
}
# The GEMMs of tests/device/prepare.sh: M K N dtype and Kiln's --precision (tf32: cuBLAS with
# TF32 allowed too).
GEMMS = [(4096, 4096, 4096, "float32", "fp32"), (4096, 4096, 4096, "float32", "tf32"),
         (4096, 4096, 4096, "float16", "fp16"), (4096, 4096, 4096, "bfloat16", "bf16"),
         (64, 512, 1000, "float32", "fp32"),
         (64, 256, 768, "float32", "fp32"), (64, 256, 1024, "float32", "fp32"),
         (64, 1024, 256, "float32", "fp32")]


def set_tf32(enabled):
    """TF32 for fp32 matmuls and convs: the fp32_precision switches of torch >= 2.9 where they
    exist (mixing them with the legacy allow_tf32 flags is an error there), else the legacy."""
    matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    if hasattr(matmul, "fp32_precision") and hasattr(conv, "fp32_precision"):
        matmul.fp32_precision = "tf32" if enabled else "ieee"
        conv.fp32_precision = "tf32" if enabled else "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled


def median_ms(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    set_tf32(False)
    dev = torch.device("cuda:0")
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}))
    for name, (build, shape) in MODELS.items():
        torch.manual_seed(0)
        model = build().to(dev).eval()
        x = torch.randn(*shape, device=dev)
        row = {"model": name}
        with torch.no_grad():
            row["torch_eager_ms"] = median_ms(lambda: model(x))
            try:
                compiled = torch.compile(model)
                row["torch_compile_ms"] = median_ms(lambda: compiled(x))
            except Exception as e:  # report, keep going
                row["torch_compile_error"] = str(e)[:200]
        print(json.dumps(row), flush=True)
    for m, k, n, dtype, precision in GEMMS:
        t = getattr(torch, dtype)
        a = torch.rand(m, k, device=dev, dtype=t) * 2 - 1
        b = torch.rand(k, n, device=dev, dtype=t) * 2 - 1
        set_tf32(precision == "tf32")
        ms = median_ms(lambda: torch.matmul(a, b))
        name = f"gemm_{m}x{k}x{n}_{dtype}" + ("" if precision == "fp32" else f"_{precision}")
        print(json.dumps({"gemm": name, "torch_ms": ms, "torch_tflops": 2 * m * k * n / ms / 1e9}),
              flush=True)
    set_tf32(False)


if __name__ == "__main__":
    sys.exit(main())
