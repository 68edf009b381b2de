"""``srnet masks``: inspect, compare, draw and randomise mask files."""

from __future__ import annotations

from srnet.experiments.verbs.base import Verb, register_group, register_verb


def show_arguments(p) -> None:
    p.add_argument("masks", help="masks.safetensors file or run directory")
    p.add_argument("--plot", help="write a layer x role sparsity heatmap (.png/.pdf/.svg)")


def show_call(args, masks_show) -> None:
    from srnet.reporting.render import format_table, plot_sparsity_heatmap

    table, meta = masks_show(args.masks)
    print(f"method={meta.method} base_model={meta.base_model} overall sparsity={table.overall:.4f}")
    print(format_table(table.rows(), list(table.rows()[0])))
    if args.plot:
        plot_sparsity_heatmap(table, args.plot)
        print(f"wrote {args.plot}")


def compare_arguments(p) -> None:
    p.add_argument("a")
    p.add_argument("b")


def compare_call(args, masks_compare) -> None:
    from srnet.reporting.render import format_table

    print(format_table(masks_compare(args.a, args.b).rows(), ["name", "jaccard", "distance"]))


def draw_arguments(p) -> None:
    p.add_argument("source", help="run directory or mask_scores.safetensors")
    p.add_argument("--sparsity", type=float, required=True, help="fraction of zeros over all masked weights")
    p.add_argument("--out", required=True, help="masks.safetensors to write (for method 'fixed')")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")


def draw_call(args, masks_draw) -> None:
    meta = masks_draw(args.source, args.sparsity, args.out, overwrite=args.overwrite)
    print(f"wrote {args.out}: {meta.method}, sparsity {meta.sparsity:.4f}")


def random_like_arguments(p) -> None:
    p.add_argument("masks", help="masks.safetensors file or run directory")
    p.add_argument("--out", required=True, help="masks.safetensors file to write")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")


def random_like_call(args, masks_random_like) -> None:
    meta = masks_random_like(args.masks, args.out, args.seed, overwrite=args.overwrite)
    print(f"wrote {args.out}: {meta.method}, sparsity {meta.sparsity:.4f}")


register_group("masks", "inspect and compare mask files")
register_verb(Verb("masks show", help="sparsity per layer and matrix (and a heatmap with --plot)",
                   api="masks_show", arguments=show_arguments, call=show_call))
register_verb(Verb("masks compare", help="Jaccard similarity and distance of two masks", api="masks_compare",
                   arguments=compare_arguments, call=compare_call))
register_verb(Verb("masks draw", help="draw a ticket: the globally top-(1-s) learned scores (l0, mask_train)",
                   api="masks_draw", arguments=draw_arguments, call=draw_call, stage="ticket"))
register_verb(Verb("masks random-like", help="a random mask with another mask's per-matrix sparsity",
                   api="masks_random_like", arguments=random_like_arguments, call=random_like_call,
                   stage="random_like"))
