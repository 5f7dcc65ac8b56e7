#!/usr/bin/python3
"""Plots kiln-bench-cost-model's curves (its --json-out): best-so-far latency, normalized to the
default schedule's (the fastest of its measurements), against trials, guided by the cost model vs
random search; one panel per workload and one for the median over workloads.

  /usr/bin/python3 bench/plot_cost_model.py CURVES.json OUT.png

Needs Debian's python3-matplotlib (bench/cost_model.sh installs it when missing).
"""
import json
import math
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def normalized(workload, arm):
    ref = workload["reference_ms"]
    if not workload[arm]["ok"] or not ref > 0:
        return []
    return [v / ref for v in workload[arm]["curve"]]


def padded(curve, n):
    """The curve extended to n trials with its last value (a search whose space ran out)."""
    return curve + [curve[-1]] * (n - len(curve)) if curve else []


def median_curve(curves, n):
    rows = [padded(c, n) for c in curves if c]
    return [statistics.median(r[i] for r in rows) for i in range(n)] if rows else []


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_cost_model.py CURVES.json OUT.png")
    with open(sys.argv[1]) as f:
        data = json.load(f)
    workloads = data["workloads"]
    n = data["trials"]
    panels = len(workloads) + 1
    cols = 4
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    styles = {"guided": ("cost model", "tab:blue"), "random": ("random", "tab:orange")}

    def draw(ax, curves, title):
        for arm, curve in curves.items():
            if curve:
                label, color = styles[arm]
                ax.plot(range(1, len(curve) + 1), curve, label=label, color=color)
        ax.set_title(title, fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xlim(1, n)
        ticks = [t for t in (1, 4, 16, 32, 64, 128, 256, 512, 1024) if t <= n]
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.axhline(1.0, color="gray", linewidth=0.5)
        ax.grid(True, which="both", linewidth=0.3)
        ax.tick_params(labelsize=8)

    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        curves = {arm: normalized(w, arm) for arm in ("guided", "random")}
        reach = w["guided_reaches_random_best_at"]
        title = "#%d %s x%d, %.0f MFLOP\ndefault %.3f ms; reaches at %s" % (
            i + 1, w["fused_ops"][:24], w["calls"], w["flops"] / 1e6, w["reference_ms"],
            reach if reach > 0 else "never")
        draw(ax, curves, title)
    ax = axes[(panels - 1) // cols][(panels - 1) % cols]
    draw(ax, {arm: median_curve([normalized(w, arm) for w in workloads], n)
              for arm in ("guided", "random")}, "median over workloads")
    ax.legend(fontsize=8)
    for j in range(panels, rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.supxlabel("trials (measured candidates)")
    fig.supylabel("best so far / default")
    fig.suptitle("Kiln tuning: cost-model-guided vs random search, %s, %d thread(s), seed %d"
                 % (data["device"], data["threads"], data["seed"]))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
