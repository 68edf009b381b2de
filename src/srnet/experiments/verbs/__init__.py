"""The verbs: each command of ``srnet`` is one declaration module here (its words, settings, API
function, arguments, printing and sweep stage, registered in :data:`.base.VERBS`), its heavy body
in a module of its own that the API function reaches: attack_run (+ attack_examples),
bias_fit, export_masked,
split_predictions, transfer_run. The declarations import no torch."""

import importlib

BUILT_IN = ("info", "run", "sweep", "finetune", "demo", "evaluate", "predict", "attack", "report",
            "compress", "export", "bench", "transfer", "bias", "masks")
"""The built-in declarations, in the order of ``srnet --help`` (importing one registers its verbs)."""
for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")
