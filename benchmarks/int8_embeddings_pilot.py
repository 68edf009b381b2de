"""Pilot (issue 50): per-channel INT8 of the ``MatMul`` weights only, the embedding tables left FP32.

srnet's INT8 modes quantize every op ONNX Runtime's dynamic quantization supports, the three
embedding lookups (``Gather``) included, with one scale per table. This scores an export the way
``evaluation.runtime=onnx-int8-per-channel`` does (its shipped ``model.onnx``, SHA-256 checked,
quantized in memory) but with ``op_types_to_quantize=["MatMul"]``, and writes ``pilot.json``
beside the run's ``metrics.json`` saying so (the record's ``int8.quantize`` still reads
``int8-per-channel``). Not a product mode: it decides whether the mode should leave embeddings FP32.

Run: ``python benchmarks/int8_embeddings_pilot.py EXPORT_DIR SHIPPED_CONFIG NAME OUTPUT_DIR``.
"""

from __future__ import annotations

import argparse
import json
import logging

from srnet.export.onnx import quantize_onnx  # bound before main() patches the module's name

PILOT = {"quantized": "MatMul weights, one scale per output channel; embeddings (Gather) left FP32",
         "script": "benchmarks/int8_embeddings_pilot.py"}


def matmul_only(graph: bytes, mode: str = "int8-per-channel") -> bytes:
    """``graph`` with its ``MatMul`` weights quantized per output channel and nothing else."""
    assert mode == "int8-per-channel", mode
    return quantize_onnx(graph, mode, op_types=["MatMul"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", help="an srnet export folder shipping model.onnx")
    parser.add_argument("recipe", help="the recipe that scored the export as shipped")
    parser.add_argument("name", help="the run's name")
    parser.add_argument("output_dir", help="where the run folder goes")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from srnet import api
    from srnet.export import onnx

    onnx.quantize_onnx = matmul_only  # what checked_graph calls for a graph built in memory
    result = api.evaluate(args.export, args.recipe, [
        "evaluation.runtime=onnx-int8-per-channel", f"name={args.name}", f"output_dir={args.output_dir}"])
    (result.run_dir / "pilot.json").write_text(json.dumps(PILOT, indent=2) + "\n")
    split = result.metrics.id.get("mnli_dev_matched")
    print(result.run_dir, split and (split["accuracy"], split["easy_hard"]["hard"]))


if __name__ == "__main__":
    main()
