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
import json
import shutil
from pathlib import Path

from onnxruntime.quantization import QuantType, quantize_dynamic


def requantize(export: Path, out: Path) -> str:
    """Copy ``export`` to ``out`` with a per-channel ``model.int8.onnx``; return its SHA-256.

    The FP32 graph is checked against the export's recorded SHA-256 first; ``out`` is written
    whole (a temporary folder renamed into place) and an existing one is refused."""
    from srnet.io import atomic_folder, file_sha256

    if out.exists():
        raise SystemExit(f"{out}: already exists (choose a new folder)")
    record = json.loads((export / "srnet_export.json").read_text())
    recorded = (record.get("sha256") or {}).get("model.onnx")
    if recorded is None or file_sha256(export / "model.onnx") != recorded:
        raise SystemExit(f"{export / 'model.onnx'}: missing, or not the file its srnet_export.json records")

    def write(folder: Path) -> None:
        shutil.copytree(export, folder, dirs_exist_ok=True)
        target = folder / "model.int8.onnx"
        target.unlink(missing_ok=True)
        quantize_dynamic(str(folder / "model.onnx"), str(target), weight_type=QuantType.QInt8,
                         per_channel=True)
        record["sha256"]["model.int8.onnx"] = file_sha256(target)
        record["pilot"] = "model.int8.onnx re-quantized per channel: benchmarks/int8_per_channel_pilot.py"
        (folder / "srnet_export.json").write_text(json.dumps(record, indent=2))

    atomic_folder(out, write)
    return record["sha256"]["model.int8.onnx"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path, help="an srnet export folder with model.onnx")
    parser.add_argument("out", type=Path, help="a new folder for the copy")
    args = parser.parse_args()
    print(args.out, requantize(args.export, args.out))


if __name__ == "__main__":
    main()
