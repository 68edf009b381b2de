"""Move a model's weights through a size-limited channel: ``narrow`` rounds every floating tensor
of a safetensors file to bfloat16 (half the bytes), ``widen`` turns them back to float32.

Used by ``benchmarks/device_study.sh bring-export``: a GPU machine returns at most 64 MiB, less
than a shrunk MiniLM in float32.  The widened model is the bfloat16-rounded one, so what is scored
from it is compared with its own FP32 PyTorch score (and with the device's score of the exact
weights, to show the rounding's effect).
Run: ``python benchmarks/device_weights.py narrow|widen SRC DST``.
"""

from __future__ import annotations

import argparse

import torch
from safetensors.torch import load_file, save_file


def convert(src: str, dst: str, dtype: torch.dtype) -> None:
    tensors = load_file(src)
    save_file({k: v.to(dtype) if v.is_floating_point() else v for k, v in tensors.items()}, dst,
              metadata={"format": "pt"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("direction", choices=("narrow", "widen"))
    parser.add_argument("src")
    parser.add_argument("dst")
    args = parser.parse_args()
    convert(args.src, args.dst, torch.bfloat16 if args.direction == "narrow" else torch.float32)


if __name__ == "__main__":
    main()
