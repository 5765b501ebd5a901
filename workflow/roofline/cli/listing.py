"""`roofline list models|gpus`: the catalog keys with a few figures each (`list` is a builtin, hence the name)."""
from __future__ import annotations

from ..engine import hardware, models
from .formats import format_table
from .options import choice

HELP = "catalog keys"


def add_arguments(parser) -> None:
    parser.add_argument("what", metavar="models|gpus", type=choice("list", ("models", "gpus")),
                        help="models: the catalog's model keys; gpus: its accelerator keys")


def run(args) -> str:
    return format_table(_models() if args.what == "models" else _gpus())


def _models() -> list[dict]:
    return [{"key": k, "name": m.name, "family": m.family,
             "params_B": f"{models.parameter_counts(m)[0] / 1e9:.3f}"} for k, m in models.catalog().items()]


def _gpus() -> list[dict]:
    return [{"key": k, "name": g.name, "bandwidth_GBps": f"{g.bandwidth_bytes_per_s / 1e9:g}",
             "memory_GiB": f"{g.memory_bytes / 2**30:.4g}",
             "scaleup": (f"{g.scaleup_link} {g.scaleup_bandwidth_bytes_per_s / 1e9:g} GB/s x{g.scaleup_domain}"
                         f"{' (reduces in flight)' if g.in_network_reduction else ''}" if g.scaleup_link else "-"),
             "dtypes": " ".join(g.peak_flops_per_s) or "- (no published peaks)"}
            for k, g in hardware.catalog().items()]
