"""`roofline ridge`: a device's ridge point P/BW per dtype and the critical decode batch."""
from __future__ import annotations

import json

from ..engine.analysis import critical_batch
from ..engine.dtypes import DTYPE_BYTES, PEAK_DTYPES, STORAGE_DTYPES
from ..engine.errors import RooflineInputError
from ..engine.scenario import Scenario
from . import options
from .formats import csv_text, format_table, json_safe
from .options import GPU_HELP, choice

HELP = "ridge point P/BW per dtype and the critical decode batch"


def add_arguments(parser) -> None:
    parser.add_argument("--gpu", required=True, help=GPU_HELP)
    parser.add_argument("--dtype", type=choice("--dtype", PEAK_DTYPES))
    parser.add_argument("--model", help="also give this model's exact critical decode batch (weights and activations "
                                        "in --dtype)")
    options.add_format(parser)


def run(args) -> str:
    gpu = options.gpu(args.gpu)
    if not gpu.peak_flops_per_s:
        raise RooflineInputError(f"--gpu: '{gpu.key}' publishes no peak FLOP/s, so it has no ridge point "
                                 f"({gpu.notes or 'no vendor figure'})")
    model = options.model(args.model) if args.model else None
    dtypes = [args.dtype] if args.dtype else list(gpu.peak_flops_per_s)
    rows = [_row(gpu, dtype, model) for dtype in dtypes]
    if args.format == "csv":
        return csv_text(rows, list(rows[0]))
    if args.format == "json":
        return json.dumps([json_safe(row) for row in rows], indent=1)
    return format_table([_shown(row) for row in rows])


def _row(gpu, dtype: str, model) -> dict:
    """One dtype's row in SI units (FLOP/s, byte/s, FLOP/byte; batches in sequences, None where not given)."""
    gpu.peak(dtype)  # clear error when the device has no such peak
    exact = {}
    if model is not None:  # tf32 is a compute mode, not a storage dtype: no model figure
        stored = {"fp4": "nvfp4"}.get(dtype, dtype)  # the fp4 peak's weights and activations: NVFP4
        storage = Scenario(weight_dtype=stored, act_dtype=stored) if stored in STORAGE_DTYPES else None
        exact = {"model": model.key,
                 "model_critical_batch": round(critical_batch(model, gpu, storage)) if storage else None}
    return {"gpu": gpu.key, "dtype": dtype, "peak_flops_per_s": gpu.peak(dtype),
            "bandwidth_bytes_per_s": gpu.bandwidth_bytes_per_s, "ridge_flop_per_byte": gpu.ridge(dtype),
            # dense decode GEMM: 2*B*K*N FLOPs over K*N*w weight bytes -> ridge at B ~ ridge * w / 2
            "approx_critical_batch": round(gpu.ridge(dtype) * DTYPE_BYTES[dtype] / 2), **exact}


def _shown(row: dict) -> dict:
    """A row as the table prints it: TFLOP/s and GB/s as vendors print them."""
    shown = {"gpu": row["gpu"], "dtype": row["dtype"], "peak_tflops": f"{row['peak_flops_per_s'] / 1e12:g}",
             "bandwidth_GBps": f"{row['bandwidth_bytes_per_s'] / 1e9:g}",
             "ridge_flop_per_byte": f"{row['ridge_flop_per_byte']:.1f}",
             "approx_critical_batch": f"{row['approx_critical_batch']}"}
    if "model" in row:
        shown.update(model=row["model"], model_critical_batch="-" if row["model_critical_batch"] is None
                     else f"{row['model_critical_batch']}")
    return shown
