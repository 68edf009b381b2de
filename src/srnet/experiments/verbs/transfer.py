"""``srnet transfer``: fine-tune one mask on several tasks, the mask fixed (the runs:
:mod:`.transfer_run`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from srnet.experiments.verbs.base import Verb, register_verb
from srnet.experiments.verbs.common import overrides_flag
from srnet.experiments.verbs.flags import config_values
from srnet.settings import VerbConfig


class TransferConfig(VerbConfig):
    """``srnet transfer``: where one mask's task runs go."""

    out_dir: Path = Field(Path("runs/transfer"), json_schema_extra={"flag": "--output-dir"},
                          description="folder of the task runs and transfer.json")


def arguments(p) -> None:
    p.add_argument("mask", help="masks.safetensors file or the run directory that holds it")
    p.add_argument("--tasks", nargs="+", required=True, metavar="RECIPE",
                   help="task recipes (YAML), each fine-tuned on the masked pre-trained backbone")
    overrides_flag(p, "override applied to every task recipe")
    p.add_argument("--overwrite", action="store_true", help="replace existing task runs")


def call(args, transfer) -> None:
    result = transfer(args.mask, args.tasks, overrides=args.overrides, overwrite=args.overwrite,
                      **config_values(args, TransferConfig))
    summary = result.summary
    pre = summary["pretraining"] or {}
    losses = ", ".join(f"{k} {v:.4f}" for k, v in pre.items()) or "no pre-training losses recorded"
    print(f"mask {summary['mask']} ({summary['method']}, sparsity {summary['sparsity']:.3f}): {losses}")
    for name, row in summary["tasks"].items():
        scores = ", ".join(f"{k} {v:.4f}" for k, v in row.items() if isinstance(v, float))
        print(f"  {name}: {scores}")
    print(f"summary: {result.out_dir / 'transfer.json'}")


register_verb(Verb("transfer", help="fine-tune one mask (e.g. from TAMT) on several tasks, mask fixed",
                   api="transfer", arguments=arguments, call=call, config=TransferConfig))
