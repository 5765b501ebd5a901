"""`roofline list models|gpus`: the catalog keys with a few figures each (`list` is a builtin, hence the name);
--format csv|json gives every figure in SI base units, one column per dtype's peak."""
from __future__ import annotations

import json

from ..engine import hardware, models
from ..engine.dtypes import PEAK_DTYPES
from .formats import csv_text, format_table
from .options import add_format, choice

HELP = "catalog keys"


def add_arguments(parser) -> None:
    parser.add_argument("what", metavar="models|gpus", type=choice("list", ("models", "gpus")),
                        help="models: the catalog's model keys; gpus: its accelerator keys")
    add_format(parser)


def run(args) -> str:
    if args.format == "table":
        return format_table(_models() if args.what == "models" else _gpus())
    rows = _model_records() if args.what == "models" else _gpu_records()
    if args.format == "json":
        return json.dumps(rows, indent=1)
    return csv_text(rows, list(rows[0]))


def _models() -> list[dict]:
    return [{"key": k, "name": m.name, "family": m.family,
             "params_B": f"{models.parameter_counts(m)[0] / 1e9:.3f}"} for k, m in models.catalog().items()]


def _model_records() -> list[dict]:
    """Every catalog model: key, name, family, parameters and those a token activates (MoE: its experts' share)."""
    out = []
    for key, m in models.catalog().items():
        total, active = models.parameter_counts(m)
        out.append({"key": key, "name": m.name, "family": m.family, "params": total, "active_params": active})
    return out


def _gpus() -> list[dict]:
    return [{"key": k, "name": g.name, "bandwidth_GBps": f"{g.bandwidth_bytes_per_s / 1e9:g}",
             "memory_GiB": f"{g.memory_bytes / 2**30:.4g}",
             "scaleup": (f"{g.scaleup_link} {g.scaleup_bandwidth_bytes_per_s / 1e9:g} GB/s x{g.scaleup_domain}"
                         f"{' (reduces in flight)' if g.in_network_reduction else ''}" if g.scaleup_link else "-"),
             "scaleout_GBps": f"{g.scaleout_bandwidth_bytes_per_s / 1e9:g}" if g.scaleout_bandwidth_bytes_per_s
             else "-",
             "dtypes": " ".join(g.peak_flops_per_s) or "- (no published peaks)",
             "peaks": "-" if not g.peak_flops_per_s else "estimate" if k in hardware.ESTIMATED else "printed"}
            for k, g in hardware.catalog().items()]


def _gpu_records() -> list[dict]:
    """Every catalog device in SI base units (bytes, byte/s, FLOP/s; dense peaks, empty where it publishes none)."""
    return [{"key": k, "name": g.name, "memory_bytes": int(g.memory_bytes),
             "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s, "scaleup_link": g.scaleup_link or "",
             "scaleup_bandwidth_bytes_per_s": g.scaleup_bandwidth_bytes_per_s, "scaleup_domain": g.scaleup_domain,
             "in_network_reduction": g.in_network_reduction,
             "scaleout_bandwidth_bytes_per_s": g.scaleout_bandwidth_bytes_per_s,
             **{f"peak_{dtype}_flops_per_s": g.peak_flops_per_s.get(dtype) for dtype in PEAK_DTYPES},
             "peaks_estimated": k in hardware.ESTIMATED, "peaks_note": hardware.ESTIMATED.get(k, "")}
            for k, g in hardware.catalog().items()]
