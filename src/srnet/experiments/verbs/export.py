"""``srnet export``: bake a mask file into its model and save a plain Hugging Face checkpoint (the
body: :mod:`.export_masked`; the settings: :class:`srnet.export.config.ExportConfig`)."""

from __future__ import annotations

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.flags import config_values
from srnet.export.config import ExportConfig


def arguments(p) -> None:
    p.add_argument("--masks", required=True, help="masks.safetensors file (or a run directory)")
    p.add_argument("--model", help="the trained model the masks belong to: a run dir, hub id or path "
                   "(default: the run holding --masks); a model with other weights is refused")
    p.add_argument("--force", action="store_true",
                   help="bake the masks into --model even though their run trained other weights")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--overwrite", action="store_true")


def call(args, export) -> None:
    out = export(args.model, args.masks, args.out, overwrite=args.overwrite, force=args.force,
                 **config_values(args, ExportConfig))
    extra = " and model.int8.onnx" if args.quantize else ""
    print(f"exported {out}" + (f" (with model.onnx{extra})" if args.onnx else ""))


register_verb(Verb("export", help="bake a mask file into a model and save a plain HF checkpoint",
                   api="export", arguments=arguments, call=call, config=ExportConfig, stage="export"))
