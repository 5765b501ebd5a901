"""`roofline ridge`: a device's ridge point P/BW per dtype and the critical decode batch."""
from __future__ import annotations

from ..engine.analysis import critical_batch
from ..engine.dtypes import DTYPE_BYTES, PEAK_DTYPES, STORAGE_DTYPES
from ..engine.errors import RooflineInputError
from ..engine.scenario import Scenario
from . import options
from .formats import format_table
from .options import GPU_HELP, choice

HELP = "ridge point P/BW per dtype and the critical decode batch"


def add_arguments(parser) -> None:
    parser.add_argument("--gpu", required=True, help=GPU_HELP)
    parser.add_argument("--dtype", type=choice("--dtype", PEAK_DTYPES))
    parser.add_argument("--model", help="also give this model's exact critical decode batch (weights and activations "
                                        "in --dtype)")


def run(args) -> str:
    gpu = options.gpu(args.gpu)
    if not gpu.peak_flops_per_s:
        raise RooflineInputError(f"--gpu: '{gpu.key}' publishes no peak FLOP/s, so it has no ridge point "
                                 f"({gpu.notes or 'no vendor figure'})")
    model = options.model(args.model) if args.model else None
    dtypes = [args.dtype] if args.dtype else list(gpu.peak_flops_per_s)
    return format_table([_row(gpu, dtype, model) for dtype in dtypes])


def _row(gpu, dtype: str, model) -> dict:
    gpu.peak(dtype)  # clear error when the device has no such peak
    exact = {}
    if model is not None:  # tf32 is a compute mode, not a storage dtype: no model figure
        stored = {"fp4": "nvfp4"}.get(dtype, dtype)  # the fp4 peak's weights and activations: NVFP4
        storage = Scenario(weight_dtype=stored, act_dtype=stored) if stored in STORAGE_DTYPES else None
        exact = {"model": model.key,
                 "model_critical_batch": f"{critical_batch(model, gpu, storage):.0f}" if storage else "-"}
    return {"gpu": gpu.key, "dtype": dtype, "peak_tflops": f"{gpu.peak(dtype) / 1e12:g}",
            "bandwidth_GBps": f"{gpu.bandwidth_bytes_per_s / 1e9:g}",
            "ridge_flop_per_byte": f"{gpu.ridge(dtype):.1f}",
            # dense decode GEMM: 2*B*K*N FLOPs over K*N*w weight bytes -> ridge at B ~ ridge * w / 2
            "approx_critical_batch": f"{gpu.ridge(dtype) * DTYPE_BYTES[dtype] / 2:.0f}", **exact}
