"""`roofline measure`: microbenchmarks on this machine, written as a calibration table (needs torch)."""
from __future__ import annotations

from ..engine.errors import RooflineInputError
from .options import choice

HELP = "microbenchmarks on this machine: a calibration table (needs torch)"


def add_arguments(parser) -> None:
    parser.add_argument("--device", type=choice("--device", ("cuda", "cpu", "mps")),
                        help="default: the best available (cuda, then mps, then cpu)")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (< 1 minute on a GPU)")
    parser.add_argument("--out", default="calibration.csv", help="CSV path; the parquet copy goes next to it")
    parser.add_argument("--gpu", help="catalog key to compute the bounds for (default: from the device name)")


def run(args) -> str:
    from ..estimate.measure import measure, write  # torch is imported only here

    if not args.out.endswith(".csv"):
        raise RooflineInputError(f"--out: '{args.out}' is not allowed; expected a path ending in .csv")
    rows, text = measure(args.device, args.quick, args.gpu)
    return text + "\nwrote " + ", ".join(write(rows, args.out))
