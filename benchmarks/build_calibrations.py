"""Build the shipped calibration tables (workflow/roofline/data/calibrations/) from third-party measurements.

    python benchmarks/build_calibrations.py [--data ../shared/data/measured]

- a100-sxm-80gb.csv, h100-sxm.csv: MEASURED. vidur's per-operator kernel times (fp16, TP1, Llama-2-7B and
  Llama-3-8B shapes; A100 attention also at Llama-2-70B TP2 heads) and, for the A100, LLMCompass's square-ish
  matmuls (wall-clock, so only those of >= 200 us, where its ~20 us of launch and sync is < 10%). FLOPs and bytes of
  every kernel come from the engine's formulas (roofline.engine.formulas) at the kernel's shape.
- h200-sxm.csv: DERIVED, not measured. The H100 rows moved to the H200: time - roof time on the H100 + roof time
  on the H200, where roof time = max(flops / peak, bytes / bandwidth) with the H100's empirical roofs (the best
  FLOP/s and GB/s its own GEMMs reach) and the H200's MEASURED ceilings (h200_ceilings.csv): the time above the roofs
  (launch, tails, tile waste) is kept, since both are the same GH100 die at the same clocks, so a launch-bound norm
  takes as long on both and a GEMV shrinks with the bandwidth; at least time x roof ratio (for the residual add,
  which beats the H100 roof from L2). Plus the measured H200 ceilings as `ceiling` rows.
"""
from __future__ import annotations

import argparse
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
MIN_WALL_CLOCK_S = 200e-6
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


def llmcompass_rows(data: Path) -> list[dict]:
    rows = []
    path = data / "llmcompass/ae/figure5/ab/real_hardware/matmul_A100.csv"
    for M, N, K, latency, _ in csv.reader(path.open()):
        M, N, K, seconds = int(M), int(N), int(K), float(latency.strip().removesuffix("ms")) * 1e-3
        if seconds < MIN_WALL_CLOCK_S:
            continue
        cost = f.linear(M, K, N, A, A)
        rows.append(row(catalog()["a100-sxm-80gb"].name, "a100-sxm-80gb", "measured", "gemm", "matmul",
                        {"m": M, "n": N, "k": K}, cost.flops, cost.bytes, seconds,
                        "LLMCompass 2e015fd ae/figure5/ab/real_hardware/matmul_A100.csv (wall-clock, >= 200 us)"))
    return rows


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


def derive_h200(h100: list[dict], data: Path) -> list[dict]:
    """H100 rows rescaled with the measured H200 ceilings (see the module docstring)."""
    ceilings, bw200, p200 = h200_ceiling_rows(data)
    p100 = max(r["flops"] / r["measured_s"] for r in h100)
    # GEMMs only: the residual add reaches 4.2 TB/s (> 3.35 datasheet) by reading its input from L2
    bw100 = max(r["bytes"] / r["measured_s"] for r in h100 if r["op_class"] == "gemm")
    h200 = catalog()["h200-sxm"]
    rows = []
    for r in h100:
        roof100 = max(r["flops"] / p100, r["bytes"] / bw100)
        roof200 = max(r["flops"] / p200, r["bytes"] / bw200)
        scale = roof200 / roof100
        # the time above the roofs (launch, tails, tile waste) is kept: same GH100 die, clocks and driver
        seconds = max(r["measured_s"] - roof100 + roof200, r["measured_s"] * scale)
        rows.append({**r, "device": h200.name, "gpu": "h200-sxm", "source": "derived", "measured_s": seconds,
                     "bound_s": bound_seconds(h200, r["dtype"], r["flops"], r["bytes"]),
                     "provenance": f"derived from H100 SXM (roof x {scale:.3f}: H200 measured ceilings "
                                   f"{bw200 / 1e12:.2f} TB/s, {p200 / 1e12:.0f} TFLOP/s bf16 vs H100 empirical roofs "
                                   f"{bw100 / 1e12:.2f} TB/s, {p100 / 1e12:.0f} TFLOP/s); not measured on an H200"})
    return ceilings + rows


def write(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CALIBRATION_COLUMNS), lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"{path.relative_to(ROOT)}: {len(rows)} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "measured")
    data = parser.parse_args().data
    tables = vidur_rows(data)
    tables["a100-sxm-80gb"] += llmcompass_rows(data)
    tables["h200-sxm"] = derive_h200(tables["h100-sxm"], data)
    OUT.mkdir(parents=True, exist_ok=True)
    for key, rows in tables.items():
        write(rows, OUT / f"{key}.csv")


if __name__ == "__main__":
    main()
