"""The model card of an export (``README.md``): Hugging Face front matter and what srnet knows.

The front matter is ``huggingface_hub``'s :class:`~huggingface_hub.ModelCardData` (``library_name:
transformers``, ``base_model`` where it is a hub id, tags such as ``pruning``); the body states how
the subnetwork was pruned (method, granularity, sparsity, heads/neurons kept), the figures of the
run it came from (ID, easy/hard, challenge sets with their collapse flag, attacks), the recipe,
and how to load it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import ModelCard, ModelCardData

CARD_FILENAME = "README.md"
DEFAULT_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The hub id of the bundled default backbone (``model.name: default``)."""


def model_card(info: Mapping[str, Any], *, metrics: Mapping[str, Any] | None = None,
               attacks: Mapping[str, Mapping[str, Any]] | None = None,
               recipe: Mapping[str, Any] | None = None) -> str:
    """The card's text for an export described by ``info`` (its ``srnet_export.json``), with the
    run's ``metrics.json``, attack summaries and resolved recipe when they are known (the
    recipe's ``output_dir``, where the run happened to be written, is left out)."""
    masks = info.get("masks") or {}
    shrunk = info.get("shrunk")
    base = hub_id(masks.get("base_model") or (metrics or {}).get("model"))
    tags = ["srnet", "pruning", "sparsity"] + (["structured-pruning"] if shrunk else [])
    if masks.get("method"):
        tags.append(f"srnet-{masks['method']}")
    data = card_data(base_model=base, tags=tags)
    lines = [f"# {(metrics or {}).get('run') or 'srnet export'}", "", *_pruning(info, masks, shrunk)]
    if metrics:
        lines += ["", *_results(metrics)]
    if attacks:
        lines += ["", "## Attacks", "", "| attack | Clean% | Aua% | Suc% | #Query |", "|---|---|---|---|---|"]
        lines += [f"| {name} | {s.get('clean', 0):.1f} | {s.get('aua', 0):.1f} | "
                  f"{s.get('success_rate', 0):.1f} | {s.get('avg_queries', 0):.1f} |"
                  for name, s in sorted(attacks.items())]
    lines += ["", *_loading(shrunk), *_onnx(info.get("onnx"))]
    if recipe:
        shown = {key: value for key, value in recipe.items() if key != "output_dir"}
        lines += ["", "## Recipe", "", "```yaml", yaml.safe_dump(shown, sort_keys=False).rstrip(), "```"]
    return render_card(data, lines)


KNOWN_DATASETS = {"mnli": "nyu-mll/multi_nli", "sst2": "stanfordnlp/sst2", "qqp": "nyu-mll/glue",
                  "fever": "fever/fever", "hans": "jhu-cogsci/hans", "paws": "google-research-datasets/paws"}
"""Task or split names of public sets -> their Hub ids (a card's ``datasets``)."""


def card_data(*, base_model: str | None, tags: list[str], labels: list[str] | None = None,
              datasets: list[str] | None = None, failed: bool = False, model_name: str | None = None,
              eval_results: list[Any] | None = None) -> ModelCardData:
    """The front matter of every srnet card: ``library_name``, ``pipeline_tag``, ``base_model``,
    tags, label names, datasets and ``model-index`` results; a model that failed a gate says so in
    a tag, in ``model-index``'s name and in ``srnet_status``, so no reader of the metadata alone
    mistakes it for a passing one."""
    extra: dict[str, Any] = {"srnet_status": "FAILED" if failed else "passed"} if model_name else {}
    if labels:
        extra["labels"] = labels
    name = f"FAILED: {model_name}" if failed and model_name else model_name
    return ModelCardData(library_name="transformers", pipeline_tag="text-classification",
                         base_model=base_model, tags=[*tags, *(["failed-gates"] if failed else [])],
                         datasets=datasets or None, model_name=name, eval_results=eval_results or None,
                         **extra)


def render_card(data: ModelCardData, lines: list[str]) -> str:
    """The card's text: the front matter, then the body ``lines``."""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines) + "\n"))


def dataset_ids(task: str, files: list[str]) -> list[str]:
    """The Hub id of a known public task, else the names of the data files."""
    if task in KNOWN_DATASETS:
        return [KNOWN_DATASETS[task]]
    return sorted({Path(f).name for f in files if f})


def hub_id(name: str | None) -> str | None:
    """A hub id for ``base_model``: the default's, a name that is not a local path, else None."""
    if not name or name == "default":
        return DEFAULT_HUB_ID if name else None
    looks_local = name.startswith((".", "/", "~")) or Path(name).exists() or name.count("/") != 1
    return None if looks_local else name


def _pruning(info: Mapping[str, Any], masks: Mapping[str, Any],
             shrunk: Mapping[str, Any] | None) -> list[str]:
    if not masks:
        return ["A dense model exported by [srnet](https://pypi.org/project/srnet/) (no masks)."]
    lines = [f"A subnetwork found by srnet: method `{masks.get('method')}`, granularity "
             f"`{masks.get('granularity')}`, target sparsity {masks.get('target_sparsity')}, measured "
             f"sparsity of the masked weights {info.get('sparsity', 0):.4f}, found on "
             f"`{masks.get('base_model')}`."]
    if shrunk:
        lines += ["", f"Pruned heads and FFN neurons are removed: {shrunk['parameters']:,} parameters of "
                  f"{shrunk['dense_parameters']:,}."]
        kept = shrunk.get("kept_units") or {}
        if kept:
            lines += ["", "| group | kept |", "|---|---|", *(f"| {k} | {v} |" for k, v in kept.items())]
    return lines


def _results(metrics: Mapping[str, Any]) -> list[str]:
    lines = ["## Results of the run", "", "| split | kind | primary | easy | hard | gap | collapsed |",
             "|---|---|---|---|---|---|---|"]
    for kind, label in (("id", "ID"), ("ood", "challenge")):
        for split, block in (metrics.get(kind) or {}).items():
            easy_hard = block.get("easy_hard") or {}
            gap = block.get("shortcut_gap", easy_hard.get("gap"))
            cells = [_num(block.get("primary")), _num(easy_hard.get("easy")), _num(easy_hard.get("hard")),
                     _num(gap), "yes" if block.get("collapsed") else "no"]
            lines.append(f"| {split} | {label} | " + " | ".join(cells) + " |")
    lines += ["", "gap: easy − hard on an ID split (RMC's protocol), the shortcut gap on a challenge set "
              "(0 = none); a collapsed model predicts one class for ≥ 95% of a split."]
    return lines


def _loading(shrunk: Mapping[str, Any] | None) -> list[str]:
    code = ("AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)" if shrunk
            else "AutoModelForSequenceClassification.from_pretrained(path)")
    return ["## How to load it", "", "```python",
            "from transformers import AutoModelForSequenceClassification", "", f"model = {code}", "```"]


def _onnx(onnx: Mapping[str, Any] | None) -> list[str]:
    """The ONNX files and how far each is from the model above."""
    if not onnx:
        return []
    lines = ["", "## ONNX", "", f"- `{onnx['file']}` (opset {onnx['opset']}): largest logit difference "
             f"from PyTorch {onnx['check']['max_abs_diff']:.2g} on a {onnx['check']['probe'][0]} x "
             f"{onnx['check']['probe'][1]} probe batch"]
    int8 = onnx.get("int8")
    if int8:
        vs = int8["vs_fp32"]
        scale = "per output channel" if int8.get("quantize") == "int8-per-channel" else "per tensor"
        lines.append(f"- `{int8['file']}`: ONNX Runtime dynamic INT8, one weight scale {scale}; against "
                     f"the FP32 graph on a "
                     f"{vs['probe'][0]} x {vs['probe'][1]} batch of random tokens: largest logit "
                     f"difference {vs['max_abs_diff']:.2g}, argmax agreement {vs['agreement']:.1%}")
    return lines


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.4f}"
