"""``srnet masks``: inspect, compare, draw and randomise mask files."""

from __future__ import annotations

from srnet.cli.commands import register_command


@register_command("masks", api={"masks show": "masks_show", "masks compare": "masks_compare",
                           "masks draw": "masks_draw", "masks random-like": "masks_random_like"})
def add_masks(sub) -> None:
    """``srnet masks ACTION``."""
    group = sub.add_parser("masks", help="inspect and compare mask files")
    actions = group.add_subparsers(metavar="ACTION")
    for add in (add_show, add_compare, add_draw, add_random_like):
        add(actions)


def add_show(actions) -> None:
    p = actions.add_parser("show", help="sparsity per layer and matrix (and a heatmap with --plot)")
    p.add_argument("masks", help="masks.safetensors file or run directory")
    p.add_argument("--plot", help="write a layer x role sparsity heatmap (.png/.pdf/.svg)")
    p.set_defaults(func=cmd_masks_show)


def cmd_masks_show(args) -> int:
    from srnet.api import masks_show
    from srnet.reporting.render import format_table, plot_sparsity_heatmap

    table, meta = masks_show(args.masks)
    print(f"method={meta.method} base_model={meta.base_model} overall sparsity={table.overall:.4f}")
    print(format_table(table.rows(), list(table.rows()[0])))
    if args.plot:
        plot_sparsity_heatmap(table, args.plot)
        print(f"wrote {args.plot}")
    return 0


def add_compare(actions) -> None:
    p = actions.add_parser("compare", help="Jaccard similarity and distance of two masks")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_masks_compare)


def cmd_masks_compare(args) -> int:
    from srnet.api import masks_compare
    from srnet.reporting.render import format_table

    comparison = masks_compare(args.a, args.b)
    print(format_table(comparison.rows(), ["name", "jaccard", "distance"]))
    return 0


def add_draw(actions) -> None:
    p = actions.add_parser("draw",
                           help="draw a ticket: the globally top-(1-s) learned scores (l0, mask_train)")
    p.add_argument("source", help="run directory or mask_scores.safetensors")
    p.add_argument("--sparsity", type=float, required=True, help="fraction of zeros over all masked weights")
    p.add_argument("--out", required=True, help="masks.safetensors to write (for method 'fixed')")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_masks_draw)


def cmd_masks_draw(args) -> int:
    from srnet.api import masks_draw

    meta = masks_draw(args.source, args.sparsity, args.out, overwrite=args.overwrite)
    print(f"wrote {args.out}: {meta.method}, sparsity {meta.sparsity:.4f}")
    return 0


def add_random_like(actions) -> None:
    p = actions.add_parser("random-like", help="a random mask with another mask's per-matrix sparsity")
    p.add_argument("masks", help="masks.safetensors file or run directory")
    p.add_argument("--out", required=True, help="masks.safetensors file to write")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=cmd_masks_random_like)


def cmd_masks_random_like(args) -> int:
    from srnet.api import masks_random_like

    meta = masks_random_like(args.masks, args.out, args.seed, overwrite=args.overwrite)
    print(f"wrote {args.out}: {meta.method}, sparsity {meta.sparsity:.4f}")
    return 0
