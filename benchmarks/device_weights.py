"""Move a model's weights through a size-limited channel: ``narrow`` rounds every floating tensor
of a safetensors file to bfloat16 (half the bytes), ``widen`` turns them back to float32.

Used by ``benchmarks/device_study.sh bring-export``: a GPU machine returns at most 64 MiB, less
than a shrunk MiniLM in float32.  The widened model is the bfloat16-rounded one, so what is scored
from it is compared with its own FP32 PyTorch score (and with the device's score of the exact
weights, to show the rounding's effect).
Run: ``python benchmarks/device_weights.py narrow|widen SRC DST``.  When DST is the weights file
of an srnet export, ``widen`` records its new SHA-256 in the export's ``srnet_export.json`` (and
``weights_rewritten``: what changed it), since srnet refuses a weights file that differs from the
recorded digest.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from srnet.io import atomic_write_json, file_sha256


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
    info_file = Path(args.dst).with_name("srnet_export.json")
    if args.direction == "widen" and info_file.is_file():
        info = json.loads(info_file.read_text(encoding="utf-8"))
        info.setdefault("sha256", {})[Path(args.dst).name] = file_sha256(args.dst)
        info["weights_rewritten"] = "bfloat16-rounded copy widened to float32 by benchmarks/device_weights.py"
        atomic_write_json(info_file, info)


if __name__ == "__main__":
    main()
