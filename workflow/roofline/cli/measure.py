"""`roofline measure`: microbenchmarks on this machine, written as a calibration table (needs torch)."""
from __future__ import annotations

from ..engine.errors import RooflineInputError
from . import options
from .options import choice, positive_int

HELP = "microbenchmarks on this machine: a calibration table (needs torch)"


def add_arguments(parser) -> None:
    parser.add_argument("--device", type=choice("--device", ("cuda", "cpu", "mps")),
                        help="default: the best available (cuda, then mps, then cpu)")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (< 1 minute on a GPU)")
    parser.add_argument("--out", default="calibration.csv",
                        help="CSV path in an existing folder; the parquet copy goes next to it")
    parser.add_argument("--gpu", help="catalog key to compute the bounds for (default: from the device name)")
    parser.add_argument("--model", help="catalog model whose layer shapes the ladder times (GQA or MHA attention; "
                                        "default: Llama-3-8B's layer and Qwen3-30B-A3B's experts)")
    parser.add_argument("--tp", type=positive_int("--tp"),
                        help="with --model: one device's share of the layer at this tensor-parallel degree (default 1)")


def run(args) -> str:
    from ..estimate.measure import check_out, measure, write  # torch is imported only in measure()
    from ..estimate.measure_shapes import DEFAULT, shapes_for

    try:
        check_out(args.out)  # before minutes of measuring: a table that cannot be written is said now
    except RooflineInputError as error:
        raise RooflineInputError(f"--out: {error}") from None
    if args.tp is not None and not args.model:
        raise RooflineInputError("--tp: only with --model (the default ladder is one device's Llama-3-8B layer)")
    shapes = shapes_for(options.model(args.model), args.tp or 1) if args.model else DEFAULT
    rows, text = measure(args.device, args.quick, args.gpu, shapes)
    return text + "\nwrote " + ", ".join(write(rows, args.out))
