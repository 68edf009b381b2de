"""What ``srnet compress`` prints at its end: every model's figures side by side, the speed, the
timing warnings and each gate."""

from __future__ import annotations

from pathlib import Path

from srnet.experiments.compress.record import CompressRecord, cut_words


def compress_summary(record: CompressRecord) -> str:
    from srnet.reporting.render import format_table

    rows = []
    for name, f in record.figures.items():
        row = {"model": name, "runtime": f.runtime, f.id_split: f.id, "hard": f.hard}
        for split, scores in {**f.evaluated, **f.challenge}.items():
            row[split] = scores.accuracy
        row["charswap Aua"] = f.charswap_aua
        rows.append(row)
    columns = list(dict.fromkeys(c for row in rows for c in row))
    speed = record.speed
    cut = (cut_words(record.level, record.dropped_layers) if record.dropped_layers
           else f"level {record.level:.0%} heads+neurons" if record.level else "no cut")
    lines = [
        format_table(rows, columns, {c: ".4f" for c in columns[2:]}),
        f"speed: {speed.speedup:.2f}x dense PyTorch FP32 ({speed.dense_ms:.1f} -> "
        f"{speed.compressed_ms:.1f} ms, {speed.shape()}, {speed.threads} thread(s), {speed.cpu})"
        + ("" if speed.speedup_batch1 is None else f"; batch 1: {speed.speedup_batch1:.2f}x"),
        *[f"timing warning: {w}" for w in speed.warnings],
        f"{cut}; {record.elapsed_s / 60:.1f} min; peak memory {record.peak_rss_mb / 1024:.2f} GiB"
        + (f"; reused ({', '.join(record.reused)}): {_folders(record.reused)}" if record.reused else ""),
        *[g.line for g in record.gates],
        "PASSED" if record.passed else "FAILED: the model is written, marked as failed",
    ]
    return "\n".join(lines)


def _folders(reused: dict[str, str]) -> str:
    """The compression folders the reused stages came from (``<folder>/stages/<stage>/<key>``)."""
    return ", ".join(dict.fromkeys(str(Path(path).parents[2]) for path in reused.values()))
