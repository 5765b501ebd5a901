"""`roofline calibrate --from aiconfigurator`: a calibration table from the kernel tables NVIDIA's
aiconfigurator-core package measured (roofline.estimate.aic_import; the optional extra `aic`). Like `measure`, it
writes a file and is not part of the Python API."""
from __future__ import annotations

from ..engine.hardware import FRAMEWORKS
from .options import choice

HELP = "a calibration table from another tool's measured kernels (--from aiconfigurator: pip install '.[aic]')"


def add_arguments(parser) -> None:
    parser.add_argument("--from", dest="source", required=True, type=choice("--from", ("aiconfigurator",)),
                        help="aiconfigurator: the kernel tables of NVIDIA's aiconfigurator-core package")
    parser.add_argument("--system", required=True, help="catalog key (h200-sxm) or the package's name (h200_sxm)")
    parser.add_argument("--framework", type=choice("--framework", FRAMEWORKS),
                        help="whose kernel tables (default: the device's shipped default)")
    parser.add_argument("--version", dest="framework_version",
                        help="the framework's version (default: the package's current one)")
    parser.add_argument("--out", required=True, help="CSV path (.csv or .csv.gz); its fit goes next to it")


def run(args) -> str:
    from ..estimate.aic_import import calibrate  # reads the package's tables (pandas, pyarrow) only here

    return calibrate(args.system, args.framework, args.framework_version, args.out)
