"""vidur's kernel times (and the H200's measured ceilings) as calibration rows, for build_calibrations.py.

- vidur_rows: MEASURED per-operator kernel times (fp16, TP1, Llama-2-7B and Llama-3-8B shapes; A100 attention also
  at Llama-2-70B TP2 heads) on the A100 and H100; FLOPs and bytes of every kernel from the engine's formulas at the
  kernel's shape. build_calibrations.py ships their norms, element-wise kernels and embeddings, which the
  aiconfigurator-core package does not measure.
- h200_ceiling_rows: the H200's measured ceilings (copy/read bandwidth, square matmuls; triton.testing.do_bench,
  L2 flushed), shipped with the H200's default table.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from roofline.engine import formulas as f  # noqa: E402
from roofline.engine.columns import CALIBRATION_COLUMNS  # noqa: E402
from roofline.engine.hardware import catalog  # noqa: E402
from roofline.engine.models import ACTIVATION_FLOPS  # noqa: E402
from roofline.estimate.calibration import bound_seconds  # noqa: E402

OUT = ROOT / "workflow" / "roofline" / "data" / "calibrations"
GPUS = {"a100": "a100-sxm-80gb", "h100": "h100-sxm"}
A = 2  # fp16 bytes per element
#: (hidden, intermediate) per vidur model file; heads come from each row
MODELS = {"llama2-7b_ops_measured.csv": (4096, 11008), "llama3-8b_ops_measured.csv": (4096, 14336)}
#: vidur's attn_kv_cache_save runs 70-140x above the copy bound of the new tokens' K/V (15 GB/s at 12k tokens): it
#: is not the compulsory copy our kv_cache_write row models (a paged-cache reshape), so it would skew elementwise.
EXCLUDED = ("kv_cache_write",)


def kernel(op: str, T: int, D: int, F: int, H: int, Hkv: int, d: int, batch: int, kv_len: int):
    """(op_class, shape fields, Cost) of one vidur operator at T tokens (engine formulas)."""
    gemms = {"qkv_proj": (D, (H + 2 * Hkv) * d), "o_proj": (H * d, D), "gate_up_proj": (D, 2 * F),
             "down_proj": (F, D)}
    if op in gemms:
        K, N = gemms[op]
        return "gemm", {"m": T, "n": N, "k": K}, f.linear(T, K, N, A, A)
    if op == "mlp_act":
        return "elementwise", {"m": T, "n": F}, f.activation(T, F, A, ACTIVATION_FLOPS["silu"], True)
    if op in ("input_norm", "post_attn_norm"):
        return "norm", {"m": T, "n": D}, f.norm(T, D, A)
    if op == "residual_add":
        return "elementwise", {"m": T, "n": D}, f.residual_add(T, D, A)
    if op == "rope":
        return "elementwise", {"m": T, "n": (H + Hkv) * d}, f.rope(T, H + Hkv, d, A)
    if op == "kv_cache_write":
        return "elementwise", {"m": T, "n": 2 * Hkv * d}, f.kv_cache_write(T, 2 * Hkv * d, A, A)
    if op == "embedding":
        return "embedding", {"m": T, "n": D}, f.embedding(T, D, 32768, A, A)
    heads = {"heads": H, "kv_heads": Hkv, "head_dim": d}
    if op == "attention_prefill":  # one causal chunk of T queries after kv_len cached keys
        pairs = T * kv_len + T * (T + 1) / 2
        cost = f.from_activations(f.fused_attention(1, H, Hkv, T, pairs, kv_len + T, d, d, A, A))
        return "attention", {"batch": 1, "q_len": T, "kv_len": kv_len + T, **heads}, cost
    if op == "attention_decode":  # `batch` sequences, each one query over kv_len + 1 keys
        keys = kv_len + 1
        cost = f.fused_attention(batch, H, Hkv, 1, keys, keys, d, d, A, A)
        return "attention", {"batch": batch, "q_len": 1, "kv_len": keys, **heads}, cost
    raise ValueError(op)


def row(device: str, gpu: str, source: str, op_class: str, op: str, shape: dict, flops: float, nbytes: float,
        measured: float, provenance: str, dtype: str = "fp16") -> dict:
    out = {c: 0 for c in CALIBRATION_COLUMNS}
    out.update(framework="", weight_dtype="", kv_dtype="", span=1)
    out.update(shape)
    out.update(device=device, gpu=gpu, source=source, op_class=op_class, op=op, dtype=dtype, flops=float(flops),
               bytes=float(nbytes), measured_s=measured, provenance=provenance,
               bound_s=bound_seconds(catalog()[gpu], dtype, flops, nbytes))
    return out


def vidur_rows(data: Path) -> dict[str, list[dict]]:
    tables: dict[str, list[dict]] = {key: [] for key in GPUS.values()}
    files = [*MODELS, "llama2-70b-tp2_attention_measured.csv"]
    for name in files:
        D, F = MODELS.get(name, (8192, 28672))
        with (data / name).open(newline="") as handle:
            for r in csv.DictReader(handle):
                if r["gpu"] not in GPUS or r["op_mapped"] in EXCLUDED:
                    continue
                gpu = GPUS[r["gpu"]]
                T, H, Hkv, d = int(r["num_tokens"]), int(r["n_q_head"]), int(r["n_kv_head"]), int(r["head_dim"])
                batch = int(float(r["batch"] or 1))
                kv_len = int(float(r["kv_len"] or 0))
                op_class, shape, cost = kernel(r["op_mapped"], T, D, F, H, Hkv, d, batch, kv_len)
                tables[gpu].append(row(
                    catalog()[gpu].name, gpu, "measured", op_class, r["op_mapped"], shape, cost.flops, cost.bytes,
                    float(r["measured_time_s"]), f"vidur 7d47513 kernel time, median (shared/data/measured/{name})"))
    return tables


def h200_ceiling_rows(data: Path) -> tuple[list[dict], float, float]:
    """The measured H200 ceilings as rows, and the best measured bandwidth [byte/s] and 16-bit FLOP/s."""
    rows, bandwidth, peak16 = [], 0.0, 0.0
    for r in csv.DictReader((data / "h200_ceilings.csv").open()):
        seconds, nbytes, flops = float(r["median_seconds"]), float(r["bytes"]), float(r["flops"])
        matmul = r["benchmark"].startswith("gemm")
        side = int(r["benchmark"].rsplit("_", 1)[1]) if matmul else 0
        if matmul:
            peak16 = max(peak16, flops / seconds) if r["dtype"] == "bf16" else peak16
        else:
            bandwidth = max(bandwidth, nbytes / seconds)
        shape = {"m": side, "n": side, "k": side} if matmul else {"m": int(nbytes)}
        out = row(r["device"], "h200-sxm", "measured", "ceiling", "matmul" if matmul else r["benchmark"].split("_")[0],
                  shape, flops if matmul else 0.0, nbytes, seconds,
                  "measured for this project: triton.testing.do_bench median, L2 flushed (shared/data/measured/"
                  "h200_ceilings.csv)", dtype=r["dtype"] or "bf16")
        rows.append(out)
    return rows, bandwidth, peak16
