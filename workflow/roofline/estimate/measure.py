"""`roofline measure`: microbenchmarks on this machine's accelerator, written as a calibration table.

Ceilings (copy and read bandwidth, large square matmuls per dtype: fp16, bf16, fp32/tf32, fp8 through
torch._scaled_mm and int8 through torch._int_mm where the device runs them) and a ladder of LLM-shaped kernels
(GEMMs at Llama-3-8B's (k, n) pairs from decode m = 1 to prefill m = 16k, in the 16-bit dtype and, on a GPU that
runs them, in fp8 with per-tensor scales; SDPA causal prefill and decode with GQA; Qwen3-30B-A3B's routed expert
block as two grouped GEMMs around SiLU-and-multiply, where torch has torch._grouped_mm; RMSNorm, LayerNorm,
SiLU-and-multiply, residual add, embedding gather), each timed as the median of repetitions
after a warm-up, with the L2 cache flushed before every repetition (CUDA events on a GPU). FLOPs, bytes and the
bound of every kernel come from the engine's formulas (roofline.engine.formulas,
roofline.estimate.calibration.bound_seconds), so the table reads as measured vs bound for the same kernel. Needs
torch (the `measure` extra); the engine does not.
"""
from __future__ import annotations

import math
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..engine import formulas as f
from ..engine.columns import CALIBRATION_COLUMNS
from ..engine.errors import RooflineInputError, clip, unknown
from ..engine.hardware import GIGA, TERA, Accelerator, catalog
from ..engine.hf_config import not_a_file
from ..engine.models import ACTIVATION_FLOPS
from .aic_rows import moe_cost
from .calibration import CEILING, TEXTS, bound_seconds, measured_ceilings
from .measure_shapes import DEFAULT, Shapes

DEVICES = ("cuda", "cpu", "mps")
#: Catalog key per pattern of the device name the driver reports (torch.cuda.get_device_name: "NVIDIA H100 80GB
#: HBM3", "NVIDIA GB200", "AMD Instinct MI300X"), the first that matches; whole words, so that the A100 is not an A10,
#: the H200 no H20 and the GB200 no B200, and not a variant the catalog lacks (an H200 NVL, an RTX 3090 Ti or 4090 D,
#: a laptop part, a GH200): those take the measured ceilings, or --gpu
NAMES = ((r"H200", "h200-sxm"), (r"H100 PCIe", "h100-pcie"), (r"H100 NVL", "h100-nvl"), (r"H100", "h100-sxm"),
         (r"H20", "h20"), (r"A100-SXM4-80GB", "a100-sxm-80gb"), (r"A100-PCIE-40GB", "a100-pcie-40gb"),
         (r"A10", "a10"), (r"L40S", "l40s"), (r"L4", "l4"), (r"GB200", "gb200-gpu"), (r"B200", "b200"),
         (r"GB300", "gb300-gpu"), (r"B300", "b300"), (r"RTX PRO 6000", "rtx-pro-6000"),
         (r"RTX 6000 Ada", "rtx-6000-ada"), (r"RTX A6000", "rtx-a6000"), (r"RTX 4090", "rtx-4090"),
         (r"RTX 3090", "rtx-3090"), (r"V100-SXM2-32GB", "v100-sxm2-32gb"), (r"T4", "t4"), (r"MI250X", "mi250x"),
         (r"MI300X", "mi300x"), (r"MI325X", "mi325x"), (r"MI350X", "mi350x"), (r"MI355X", "mi355x"))


@dataclass(frozen=True)
class Plan:
    """Sizes of one run: full on an accelerator, --quick (< 1 min on a GPU), and small on a CPU."""

    scale: int  # (k, n) and hidden sizes divided by this
    decode_m: tuple[int, ...]
    prefill_m: tuple[int, ...]
    prefill_s: tuple[int, ...]
    decode_kv: tuple[int, ...]
    decode_batch: tuple[int, ...]
    tokens: tuple[int, ...]  # norms, element-wise ops and the MoE block
    square: int
    stream_bytes: int
    reps: int

    @property
    def gemm_m(self) -> tuple[int, ...]:
        """GEMM rows from decode to prefill, each once (the full plan's decode ladder ends where prefill starts)."""
        return tuple(sorted(set(self.decode_m + self.prefill_m)))


def plan(device: str, quick: bool) -> Plan:
    if device != "cuda":  # CPU / MPS: small shapes, the same ladder
        return Plan(8, (1, 4, 16, 64), (256,) if quick else (256, 1024), (128, 256), (256, 1024), (1, 4),
                    (1, 64, 1024), 512 if quick else 1024, 1 << 25, 3 if quick else 10)
    if quick:
        return Plan(1, (1, 8, 32, 128, 512), (2048, 8192), (1024, 4096), (1024, 8192), (1, 16),
                    (1, 64, 1024, 8192), 8192, 1 << 31, 20)
    return Plan(1, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512), (512, 1024, 2048, 4096, 8192, 16384),
                (512, 1024, 2048, 4096, 8192), (512, 2048, 8192, 32768), (1, 8, 32, 64),
                (1, 8, 64, 256, 1024, 4096, 16384), 8192, 1 << 31, 50)


class Timer:
    """Median seconds of fn() over reps, after warm-up, with the L2 (or CPU caches) flushed before each rep."""

    def __init__(self, torch, device: str, reps: int):
        self.torch, self.device, self.reps = torch, device, reps
        # 256 MB: over twice the L2 of any GPU in the catalog; 16 MB on a CPU keeps a quick run quick
        self.flush = torch.empty(256 << 20 if device == "cuda" else 16 << 20, dtype=torch.uint8, device=device)

    def __call__(self, fn) -> float:
        torch = self.torch
        for _ in range(2):
            fn()
        times = []
        for _ in range(self.reps):
            self.flush.zero_()
            if self.device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e-3)
            else:
                self._sync()
                begin = time.perf_counter()
                fn()
                self._sync()
                times.append(time.perf_counter() - begin)
        return statistics.median(times)

    def _sync(self):
        if self.device == "mps":
            self.torch.mps.synchronize()


def best_device(torch) -> str:
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def describe(torch, device: str) -> tuple[str, str]:
    """(device name, provenance: versions, driver and clocks) of this run."""
    versions = f"torch {torch.__version__}"
    if device == "cuda":
        name = torch.cuda.get_device_name()
        versions += f", CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.max.sm,clocks.mem",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout
            versions += f", driver/SM clock/max SM clock/memory clock: {smi.strip()}"
        except (OSError, subprocess.SubprocessError):
            versions += ", nvidia-smi unavailable (clocks not recorded)"
        timer = "CUDA events"
    else:
        name = platform.processor() or platform.machine() if device == "cpu" else "Apple GPU (MPS)"
        timer = "perf_counter"
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return name, f"roofline measure on {device}, {when}: {timer}, median, caches flushed; {versions}"


#: name endings of variants with specs of their own, which the catalog does not hold
VARIANTS = r" (?:NVL|Ti|D|SUPER|Laptop)\b"


def catalog_gpu(name: str, key: str | None) -> Accelerator | None:
    """The catalog entry to compute bounds for: --gpu, else the one whose name the device reports, else None."""
    if key:
        if key not in catalog():
            raise unknown("--gpu", key, catalog())
        return catalog()[key]
    return next((catalog()[k] for pattern, k in NAMES if re.search(rf"(?<![\w-]){pattern}(?![\w-]|{VARIANTS})", name)),
                None)


TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def ceilings(torch, device: str, p: Plan):
    """(fields, Cost, fn) of the ceiling benchmarks: copy, read, square matmuls per dtype the device runs."""
    n = p.stream_bytes // 4
    src, dst = torch.ones(n, device=device), torch.empty(n, device=device)
    yield {"op": "copy", "m": n}, f.Cost(flops=0.0, act_read=4 * n, act_write=4 * n), lambda: dst.copy_(src)
    yield {"op": "read", "m": n}, f.Cost(flops=float(n), act_read=4 * n, act_write=4.0), lambda: src.sum()
    s = p.square
    for dtype in ("fp16", "bf16", "fp32"):
        if device == "cpu" and dtype != "fp32" and p.reps < 5:
            continue  # quick CPU run: 16-bit matmuls on a CPU crawl, and the ladder runs in fp32
        a = torch.randn(s, s, device=device, dtype=getattr(torch, TORCH_DTYPES[dtype]))
        w = 4 if dtype == "fp32" else 2
        label = "tf32" if dtype == "fp32" and device == "cuda" and torch.backends.cuda.matmul.allow_tf32 else dtype
        yield ({"op": "matmul", "dtype": label, "m": s, "n": s, "k": s}, f.linear(s, s, s, w, w),
               lambda a=a: a @ a)
    if device == "cuda":
        yield from _low_precision(torch, s)


def _low_precision(torch, s: int):
    """fp8 (e4m3, torch._scaled_mm) and int8 (torch._int_mm) square matmuls, where this GPU and torch run them; their
    outputs are bf16 (2 bytes) and int32 (4 bytes) a value."""
    try:
        a = torch.randn(s, s, device="cuda").to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        yield ({"op": "matmul", "dtype": "fp8", "m": s, "n": s, "k": s}, f.linear(s, s, s, 1, 1, out_width=2),
               lambda: torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    except (RuntimeError, AttributeError, TypeError):
        pass
    b = torch.randint(-8, 8, (s, s), device="cuda", dtype=torch.int8)
    for second in (b.t().contiguous().t(), b):  # cuBLASLt int8 wants a column-major second operand on some versions
        try:
            torch._int_mm(b, second)
        except (RuntimeError, AttributeError, TypeError):
            continue
        yield ({"op": "matmul", "dtype": "int8", "m": s, "n": s, "k": s}, f.linear(s, s, s, 1, 1, out_width=4),
               lambda second=second: torch._int_mm(b, second))
        return


def ladder(torch, device: str, p: Plan, dtype: str, s: Shapes):
    """(fields, Cost, fn) of the LLM-shaped kernels of `s` at `dtype` (fp16 / bf16 / fp32)."""
    fn_ = torch.nn.functional
    t = getattr(torch, TORCH_DTYPES[dtype])
    a = 4 if dtype == "fp32" else 2
    d, ff, hd = s.hidden, s.mlp, s.head_dim
    for op, k, n in s.gemms:
        w = torch.randn(n, k, device=device, dtype=t)
        for m in p.gemm_m:
            x = torch.randn(m, k, device=device, dtype=t)
            yield ({"op_class": "gemm", "op": op, "m": m, "n": n, "k": k, "weight_dtype": dtype},
                   f.linear(m, k, n, a, a), lambda x=x, w=w: fn_.linear(x, w))
    heads, kv_heads = s.heads, s.kv_heads
    for seq in p.prefill_s:
        q = torch.randn(1, heads, seq, hd, device=device, dtype=t)
        kv = torch.randn(2, 1, kv_heads, seq, hd, device=device, dtype=t)  # K and V: separate memory
        cost = f.from_activations(f.fused_attention(1, heads, kv_heads, seq, seq * (seq + 1) / 2, seq, hd, hd, a, a))
        yield ({"op_class": "attention", "op": "sdpa_prefill", "batch": 1, "q_len": seq, "kv_len": seq, "heads": heads,
                "kv_heads": kv_heads, "head_dim": hd, "kv_dtype": dtype}, cost,
               lambda q=q, kv=kv: fn_.scaled_dot_product_attention(q, kv[0], kv[1], is_causal=True, enable_gqa=True))
    for b in p.decode_batch:
        for keys in p.decode_kv:
            q = torch.randn(b, heads, 1, hd, device=device, dtype=t)
            kv = torch.randn(2, b, kv_heads, keys, hd, device=device, dtype=t)
            cost = f.fused_attention(b, heads, kv_heads, 1, keys, keys, hd, hd, a, a)
            yield ({"op_class": "attention", "op": "sdpa_decode", "batch": b, "q_len": 1, "kv_len": keys,
                    "heads": heads, "kv_heads": kv_heads, "head_dim": hd, "kv_dtype": dtype}, cost,
                   lambda q=q, kv=kv: fn_.scaled_dot_product_attention(q, kv[0], kv[1], enable_gqa=True))
    table = torch.randn(s.vocab, d, device=device, dtype=t)
    for m in p.tokens:
        x, r = torch.randn(m, d, device=device, dtype=t), torch.randn(m, d, device=device, dtype=t)
        g, u = torch.randn(m, ff, device=device, dtype=t), torch.randn(m, ff, device=device, dtype=t)
        scale, shift = torch.ones(d, device=device, dtype=t), torch.zeros(d, device=device, dtype=t)
        ids = torch.randint(0, table.shape[0], (m,), device=device)
        shape = {"m": m, "n": d}
        yield ({"op_class": "norm", "op": "rmsnorm", **shape}, f.norm(m, d, a),
               lambda x=x, scale=scale: fn_.rms_norm(x, (d,), scale))
        yield ({"op_class": "norm", "op": "layernorm", **shape}, f.norm(m, d, a, 2),
               lambda x=x, scale=scale, shift=shift: fn_.layer_norm(x, (d,), scale, shift))
        yield ({"op_class": "elementwise", "op": "residual_add", **shape}, f.residual_add(m, d, a),
               lambda x=x, r=r: x + r)
        # NB: eager PyTorch runs silu and the multiply as two kernels (serving engines fuse them into one)
        yield ({"op_class": "elementwise", "op": "silu_mul", "m": m, "n": ff},
               f.activation(m, ff, a, ACTIVATION_FLOPS["silu"], True), lambda g=g, u=u: fn_.silu(g) * u)
        yield ({"op_class": "embedding", "op": "embedding", **shape}, f.embedding(m, d, table.shape[0], a, a),
               lambda ids=ids: fn_.embedding(ids, table))


def fp8_ladder(torch, p: Plan, s: Shapes):
    """(fields, Cost, fn) of the weight GEMMs in fp8 e4m3 with per-tensor scales and a bf16 output
    (torch._scaled_mm, cuBLASLt), at every m the GPU runs: torch refuses an m that is not a multiple of 16 on some
    versions, and such m are left out rather than padded (a padded kernel is another shape)."""
    one = torch.tensor(1.0, device="cuda")
    for op, k, n in s.gemms:
        w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        for m in p.gemm_m:
            x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)

            def fn(x=x, w=w):
                return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            if _runs(fn):
                yield ({"op_class": "gemm", "op": op, "dtype": "fp8", "weight_dtype": "fp8", "m": m, "n": n, "k": k},
                       f.linear(m, k, n, 1, 1, out_width=2), fn)


def moe_ladder(torch, device: str, p: Plan, dtype: str, s: Shapes):
    """(fields, Cost, fn) of the routed expert block of `s` at `dtype` per token count: tokens x top-k rows
    routed evenly over the experts (as the package's balanced routing), gate/up as one grouped GEMM, SiLU-and-
    multiply, down as a second grouped GEMM (torch._grouped_mm); routing and the permutation are not timed, as the
    engine books them elsewhere. Nothing for a dense model, or where this torch has no grouped GEMM for the device."""
    if s.moe is None:
        return
    t = getattr(torch, TORCH_DTYPES[dtype])
    d, ff, experts, top_k = s.moe
    # weights stored [experts, out, in] and read transposed: the column-major operand grouped GEMMs want
    up = torch.randn(experts, 2 * ff, d, device=device, dtype=t).transpose(-2, -1)
    down = torch.randn(experts, d, ff, device=device, dtype=t).transpose(-2, -1)
    for tokens in p.tokens:
        pairs = tokens * top_k
        counts = [pairs // experts + (e < pairs % experts) for e in range(experts)]
        offs = torch.tensor(counts, device=device).cumsum(0).to(torch.int32)
        x = torch.randn(pairs, d, device=device, dtype=t)

        def fn(x=x, offs=offs):
            gate, upper = torch._grouped_mm(x, up, offs=offs).chunk(2, dim=-1)
            return torch._grouped_mm(torch.nn.functional.silu(gate) * upper, down, offs=offs)
        if not _runs(fn):
            return
        yield ({"op_class": "moe", "op": "moe_experts", "weight_dtype": dtype, "m": tokens, "n": ff, "k": d,
                "experts": experts, "top_k": top_k, "span": 1},
               moe_cost(tokens, d, ff, experts, top_k, 1, 1, dtype, dtype), fn)


def _runs(fn) -> bool:
    """Whether fn runs here (a kernel this device or torch version refuses raises on its first call)."""
    try:
        fn()
    except (RuntimeError, AttributeError, TypeError, NotImplementedError):
        return False
    return True


def _ceiling_spec(name: str, rows: list[dict]) -> Accelerator:
    """A device spec made of the measured ceilings: the bound of a device the catalog does not know (a CPU)."""
    measured = measured_ceilings(rows)
    peaks = dict(measured["peak_flops_per_s"])
    for alias, source in (("fp32", "tf32"), ("fp16", "bf16"), ("bf16", "fp16"), ("fp32", "bf16")):
        peaks.setdefault(alias, peaks.get(source, 0.0))
    return Accelerator(key="", name=name, vendor="", memory_bytes=0.0,
                       bandwidth_bytes_per_s=measured["bandwidth_bytes_per_s"] or 1.0,
                       peak_flops_per_s={k: v for k, v in peaks.items() if v})


def _record(fields: dict, cost, seconds: float, context: dict) -> dict:
    # shape columns 0 when unused; the text columns a lookup keys on (framework, weight and KV dtypes) empty, not 0
    row = {c: "" if c in TEXTS else 0 for c in CALIBRATION_COLUMNS}
    row.update(fields)
    row.update(device=context["device"], gpu=context["gpu"], source="measured", flops=float(cost.flops),
               bytes=float(cost.bytes), measured_s=seconds, provenance=context["provenance"])
    return row


def measure(device: str | None = None, quick: bool = False, gpu_key: str | None = None,
            shapes: Shapes = DEFAULT) -> tuple[list[dict], str]:
    """(calibration rows in CALIBRATION_COLUMNS, summary text: measured ceilings vs the catalog's) of the ladder of
    `shapes` (measure_shapes: Llama-3-8B's layer and Qwen3-30B-A3B's experts, or a model's at a TP degree)."""
    try:
        import torch
    except ImportError:
        raise RooflineInputError("measure: needs PyTorch; install it with pip install -e '.[measure]'") from None
    device = device or best_device(torch)
    if device not in DEVICES or (device == "cuda" and not torch.cuda.is_available()) or (
            device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())):
        raise RooflineInputError(f"--device: '{device}' is not available here; available: "
                                 f"{', '.join(d for d in DEVICES if d == 'cpu' or d == best_device(torch))}")
    p = plan(device, quick)
    shapes = shapes.scaled(p.scale)
    name, provenance = describe(torch, device)
    provenance += f"; shapes: {shapes.label}"
    spec = catalog_gpu(name, gpu_key)
    context = {"device": name, "gpu": spec.key if spec else "", "provenance": provenance}
    timer = Timer(torch, device, p.reps)
    rows, failed = [], []

    def timed(fields: dict, cost, fn) -> None:
        # one kernel this torch or device cannot run costs its row, not the run (a one-shot GPU session keeps the rest)
        try:
            rows.append(_record(fields, cost, timer(fn), context))
        except (RuntimeError, TypeError, NotImplementedError) as error:
            failed.append(f"{fields.get('op')} {fields.get('dtype')} m {fields.get('m')}: "
                          f"{str(error).splitlines()[0][:100] if str(error) else type(error).__name__}")

    with torch.inference_mode():
        for fields, cost, fn in ceilings(torch, device, p):
            timed({"op_class": CEILING, "dtype": "fp32", **fields}, cost, fn)
        spec = spec or _ceiling_spec(name, rows)
        dtype = {"cuda": "bf16", "mps": "fp16", "cpu": "fp32"}[device]
        kernels = [ladder(torch, device, p, dtype, shapes), moe_ladder(torch, device, p, dtype, shapes)]
        if device == "cuda" and "fp8" in spec.peak_flops_per_s:
            kernels.append(fp8_ladder(torch, p, shapes))
        for fields, cost, fn in (kernel for group in kernels for kernel in group):
            timed({"dtype": dtype, **fields}, cost, fn)
    for row in rows:
        row["bound_s"] = bound_seconds(spec, row["dtype"], row["flops"], row["bytes"])
    skipped = f"\nnot measured ({len(failed)}): " + "; ".join(failed) if failed else ""
    return rows, summary(rows, spec) + skipped


def summary(rows: list[dict], spec: Accelerator) -> str:
    """Measured ceilings against the catalog's (or, for an unknown device, alone) and the launch floor."""
    measured = measured_ceilings(rows)
    known = bool(spec.key)
    lines = [f"{rows[0]['device']}: bounds computed for {spec.key or 'the measured ceilings (not in the catalog)'}"]
    bandwidth = measured["bandwidth_bytes_per_s"]
    if bandwidth:
        sheet = spec.bandwidth_bytes_per_s
        ref = f" of {sheet / GIGA:.0f} GB/s datasheet ({bandwidth / sheet:.0%})"
        lines.append(f"  bandwidth {bandwidth / GIGA:9.1f} GB/s" + (ref if known else ""))
    for dtype, peak in measured["peak_flops_per_s"].items():
        sheet = spec.peak_flops_per_s.get(dtype)
        ref = f" of {sheet / TERA:.1f} TFLOP/s datasheet ({peak / sheet:.0%})" if known and sheet else ""
        lines.append(f"  {dtype:5s} matmul {peak / TERA:9.2f} TFLOP/s{ref}")
    ladder_rows = [r for r in rows if r["op_class"] != CEILING]
    floor = min(r["measured_s"] for r in ladder_rows)
    ratios = [r["measured_s"] / r["bound_s"] for r in ladder_rows if r["bound_s"] > 0 and math.isfinite(r["bound_s"])]
    lines.append(f"  launch floor (shortest kernel) {floor * 1e6:.1f} us; measured / bound median "
                 f"{statistics.median(ratios):.2f}x over {len(ladder_rows)} kernels")
    return "\n".join(lines)


def check_out(out: str) -> tuple[Path, Path]:
    """(CSV path, parquet path) of `out` if both can be written: a path ending in .csv in an existing folder we may
    write in, neither path a directory or another non-regular file; checked before minutes of measuring."""
    try:
        return _writable(out)
    except (OSError, ValueError) as error:  # a name too long, a NUL byte
        if isinstance(error, RooflineInputError):
            raise
        reason = getattr(error, "strerror", None) or str(error)
        raise RooflineInputError(f"'{clip(out, 200)}' cannot be written ({clip(reason, 80)})") from None


def _writable(out: str) -> tuple[Path, Path]:
    csv_path = Path(out)
    if csv_path.suffix != ".csv":
        raise RooflineInputError(f"'{clip(out, 200)}' is not allowed; expected a path ending in .csv")
    folder = csv_path.parent
    if not folder.is_dir():
        raise RooflineInputError(f"'{clip(out, 200)}': folder '{clip(folder, 200)}' "
                                 f"{not_a_file(folder, None) or 'is not a folder'}; create it first")
    paths = (csv_path, csv_path.with_suffix(".parquet"))
    for path in paths:
        if path.exists() and not path.is_file():
            kind = not_a_file(path, None) or "is not a regular file"
            raise RooflineInputError(f"'{clip(path, 200)}' {kind}; expected a file path ending in .csv")
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".roofline-measure-", suffix=".tmp")
    except OSError as error:
        raise RooflineInputError(f"'{clip(out, 200)}': cannot write in folder '{clip(folder, 200)}' "
                                 f"({error.strerror})") from None
    os.close(handle)
    os.unlink(probe)
    return paths


def write(rows: list[dict], out: str) -> list[str]:
    """Write `out` (CSV) and the same table as parquet next to it, each to a temporary file first, both renamed into
    place once both are complete (a run killed or failing while writing leaves no table); returns the paths."""
    import pandas as pd

    table = pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))
    paths = check_out(out)
    temps = [path.with_name(f".{path.name}.{os.getpid()}.tmp") for path in paths]
    try:
        table.to_csv(temps[0], index=False)
        table.to_parquet(temps[1], index=False)
        for temp, path in zip(temps, paths):
            os.replace(temp, path)
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)
    return [str(path) for path in paths]
