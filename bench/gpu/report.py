#!/usr/bin/env python3
"""The GPU benchmark table from tests/device/run.sh's results (kiln_<part>.jsonl and
torch.jsonl in each DIR, e.g. the $OUT of each device call): per model Kiln's median latency
(ms) against PyTorch eager and torch.compile on the same GPU, ratio = Kiln / peer (below 1:
Kiln faster); per GEMM Kiln's TFLOP/s against cuBLAS (torch.matmul), ratio = Kiln / cuBLAS
throughput.

usage: bench/gpu/report.py DIR [DIR ...]"""
import glob
import json
import os
import re
import sys


def rows(dirs, pattern):
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, pattern))):
            for line in open(path):
                line = line.strip()
                if line.startswith("{"):
                    yield json.loads(line)


def fmt(v, spec=".3f"):
    return "-" if v is None else format(v, spec)


def main(dirs):
    kiln = {r.get("model") or r.get("gemm"): r["kiln"] for r in rows(dirs, "kiln_*.jsonl")}
    torch = {r.get("model") or r.get("gemm"): r for r in rows(dirs, "torch.jsonl")
             if "model" in r or "gemm" in r}
    peer_of = {"mobilenet_v2_taps": "mobilenet_v2", "transformer_encoder_dyn": "transformer_encoder"}
    print("| model | Kiln ms | PyTorch eager ms | Kiln/eager | torch.compile ms | Kiln/compile |")
    print("|---|---|---|---|---|---|")
    for name, k in sorted(kiln.items()):
        if name.startswith("gemm_"):
            continue
        base = re.sub(r"_(tf32|fp16|bf16)$", "", name)  # a tensor-core variant's model
        p = torch.get(peer_of.get(base, base), {})
        eager, comp = p.get("torch_eager_ms"), p.get("torch_compile_ms")
        print(f"| {name} | {fmt(k['median_ms'])} | {fmt(eager)} | "
              f"{fmt(k['median_ms'] / eager if eager else None, '.2f')} | {fmt(comp)} | "
              f"{fmt(k['median_ms'] / comp if comp else None, '.2f')} |")
    print()
    print("| GEMM | Kiln ms | Kiln TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | Kiln/cuBLAS |")
    print("|---|---|---|---|---|---|")
    for name, k in sorted(kiln.items()):
        m = re.match(r"gemm_(\d+)x(\d+)x(\d+)_", name)
        if not m:
            continue
        flop = 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))
        kt = flop / k["median_ms"] / 1e9
        p = torch.get(name, {})
        tt = p.get("torch_tflops")
        print(f"| {name} | {fmt(k['median_ms'])} | {fmt(kt, '.2f')} | {fmt(p.get('torch_ms'))} | "
              f"{fmt(tt, '.2f')} | {fmt(kt / tt if tt else None, '.2f')} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
