"""Pilot (issue 50): an export's shipped ``model.onnx`` re-quantized with per-channel INT8 weights.

srnet's ``--quantize int8`` is ONNX Runtime's dynamic quantization with one scale per weight
tensor. This copies an export folder to DST and replaces its ``model.int8.onnx`` with the same
dynamic quantization at one scale per output channel, updating the SHA-256 in
``srnet_export.json`` (and marking the record as a pilot), so ``srnet evaluate DST --set
evaluation.runtime=onnx-int8`` and ``srnet bench ... --onnx --quantize int8`` score and time it
as shipped. Not a product mode: it decides whether one is worth building.

Run: ``python benchmarks/int8_per_channel_pilot.py EXPORT_DIR DST``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

from onnxruntime.quantization import QuantType, quantize_dynamic


def requantize(export: Path, out: Path) -> str:
    """Copy ``export`` to ``out`` with a per-channel ``model.int8.onnx``; return its SHA-256."""
    if out.exists():
        raise SystemExit(f"{out}: already exists (choose a new folder)")
    shutil.copytree(export, out)
    target = out / "model.int8.onnx"
    target.unlink(missing_ok=True)
    quantize_dynamic(str(export / "model.onnx"), str(target), weight_type=QuantType.QInt8, per_channel=True)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    record = json.loads((out / "srnet_export.json").read_text())
    record["sha256"]["model.int8.onnx"] = digest
    record["pilot"] = "model.int8.onnx re-quantized per channel: benchmarks/int8_per_channel_pilot.py"
    (out / "srnet_export.json").write_text(json.dumps(record, indent=2))
    return digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path, help="an srnet export folder with model.onnx")
    parser.add_argument("out", type=Path, help="a new folder for the copy")
    args = parser.parse_args()
    print(args.out, requantize(args.export, args.out))


if __name__ == "__main__":
    main()
