"""Shrunk vs dense latency per family, at the default backbone's size, on random weights.

No trained DeBERTa-v3 or ModernBERT checkpoint is on this machine, so each family is a random
classifier with MiniLM's shape (6 layers, hidden 384, 12 heads, FFN 1536; ModernBERT's GLU FFN of
1536 neurons).  ``srnet bench --omp S`` masks S of its heads and neurons by OMP (magnitude on
random weights: the speed, not the accuracy, is measured), shrinks them, and times dense and
shrunk side by side in interleaved rounds; the ratio is dense ÷ shrunk median latency.

Run: ``python benchmarks/bench_family_shrink.py [--threads 1 --rounds 10 --sparsity 0.5]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from srnet import api
from srnet.console import quiet_libraries

SIZE = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536}
FAMILIES = {  # label -> (model_type, config beyond SIZE)
    "BERT (MiniLM's shape)": ("bert", {}),
    "DeBERTa-v3": ("deberta-v2", {"relative_attention": True, "pos_att_type": ["p2c", "c2p"],
                                  "position_buckets": 256, "norm_rel_ebd": "layer_norm",
                                  "share_att_key": True}),
    "ModernBERT": ("modernbert", {"pad_token_id": 0, "cls_token_id": 101, "sep_token_id": 102,
                                  "bos_token_id": 101, "eos_token_id": 102, "global_attn_every_n_layers": 3}),
}


def save_random(folder: Path, model_type: str, extra: dict) -> Path:
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    from srnet.models import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    config = AutoConfig.for_model(model_type, vocab_size=tokenizer.vocab_size, num_labels=3,
                                  max_position_embeddings=512, **SIZE, **extra)
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sparsity", type=float, default=0.5)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--length", type=int, default=128)
    args = parser.parse_args()
    quiet_libraries()
    print(f"shrunk {args.sparsity:.0%} heads+neurons vs dense, {args.threads} thread(s), "
          f"median of {args.rounds} interleaved rounds, length {args.length}")
    print("| family | batch | dense ms | shrunk ms | speed-up | parameters (M) |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for label, (model_type, extra) in FAMILIES.items():
            folder = save_random(Path(tmp) / model_type, model_type, extra)
            result = api.bench([str(folder)], omp=[args.sparsity], batch_sizes=args.batch_sizes,
                               lengths=[args.length], rounds=args.rounds, threads=args.threads)
            rows = result["rows"]
            for batch in args.batch_sizes:
                dense, shrunk = (r for r in rows if r["batch"] == batch and "unstructured" not in r["model"]
                                 and r["runtime"] == "torch")
                print(f"| {label} | {batch} | {dense['latency_ms']:.1f} | {shrunk['latency_ms']:.1f} | "
                      f"{shrunk['speedup']:.2f}× | {dense['params_m']:.1f} → {shrunk['params_m']:.1f} |")
            if result["warnings"]:
                print(f"  ({label}: {'; '.join(result['warnings'])})")


if __name__ == "__main__":
    main()
