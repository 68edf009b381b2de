"""ONNX graphs traced with the model's own attention (``sdpa``) vs eager attention, side by side.

For each model, traces both graphs (``srnet.export.onnx.onnx_bytes(model, attention=...)``),
checks each against PyTorch's logits, quantizes both as ``--quantize`` says (``none``: FP32), and
times them in interleaved rounds with PyTorch FP32 of the same model, at batch 32 x 128 and
1 x 128 on ``--threads`` threads.  Prints the medians and the ratios: sdpa / eager (> 1: the
eager graph is faster) and PyTorch / graph.

Run: ``python benchmarks/bench_attention_export.py default runs/.../model --quantize int8-per-channel``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from srnet.console import quiet_libraries
from srnet.export.onnx import check_onnx, example_inputs, onnx_bytes, ort_feeds, ort_session, quantize_onnx
from srnet.export.runtimes import QUANTIZE_MODES
from srnet.models.loading import load_classifier

SHAPES = ((32, 128), (1, 128))
ATTENTIONS = {"sdpa": None, "eager": "eager"}  # None: the implementation the model runs with (sdpa)


def graphs(model: torch.nn.Module, quantize: str) -> dict[str, bytes]:
    """Both traces of ``model``, checked against PyTorch, quantized as ``quantize`` says."""
    out = {}
    for name, attention in ATTENTIONS.items():
        graph = onnx_bytes(model, attention=attention)
        check_onnx(model, ort_session(graph, threads=1))
        out[name] = graph if quantize == "none" else quantize_onnx(graph, quantize)
    return out


def time_model(label: str, model: torch.nn.Module, args: argparse.Namespace) -> None:
    traced = graphs(model, args.quantize)
    sessions = {name: ort_session(graph, threads=args.threads) for name, graph in traced.items()}
    for batch, length in SHAPES:
        inputs = example_inputs(model, batch, length, pad=False)
        feeds = {name: ort_feeds(s, inputs) for name, s in sessions.items()}
        runners = {name: (lambda s=s, f=feeds[name]: s.run(None, f)) for name, s in sessions.items()}
        runners["torch"] = lambda x=inputs: model(**x)
        logits = {name: runners[name]()[0] for name in sessions}
        times: dict[str, list[float]] = {name: [] for name in runners}
        rounds = args.rounds if batch > 1 else args.rounds * 5
        for r in range(rounds):
            for name in list(runners)[r % len(runners):] + list(runners)[: r % len(runners)]:
                start = time.perf_counter()
                runners[name]()
                times[name].append(time.perf_counter() - start)
        ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
        diff = float(np.abs(logits["sdpa"] - logits["eager"]).max())
        torch_ms, sdpa_ms, eager_ms = ms["torch"], ms["sdpa"], ms["eager"]
        ratios = f"{sdpa_ms / eager_ms:>13.3f}{torch_ms / sdpa_ms:>13.2f}{torch_ms / eager_ms:>13.2f}"
        times_ms = f"{torch_ms:>10.1f}{sdpa_ms:>10.1f}{eager_ms:>10.1f}"
        print(f"{label:<28}{batch:>4} x {length:<4}{times_ms}{ratios}{diff:>12.2g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model folders, hub ids or 'default'")
    parser.add_argument("--quantize", default="int8-per-channel", choices=["none", *QUANTIZE_MODES])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    print(f"graphs: {args.quantize}; {args.threads} thread(s); medians of interleaved rounds "
          f"({args.rounds} at batch 32, {args.rounds * 5} at batch 1); random token ids, no padding")
    print(f"{'model':<28}{'shape':>11}{'torch ms':>10}{'sdpa ms':>10}{'eager ms':>10}"
          f"{'sdpa/eager':>13}{'torch/sdpa':>13}{'torch/eager':>13}{'max|dlogit|':>12}")
    with torch.inference_mode():
        for name in args.models:
            time_model(name[-28:], load_classifier(name).eval(), args)


if __name__ == "__main__":
    main()
