"""Invariants of the roofline that must hold for every model, device and scenario (property-based)."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from roofline.engine import analysis, hardware, models, sweeps
from roofline.engine.scenario import Scenario
from roofline.estimate import expected as estimator

MODELS = sorted(models.catalog())
GPUS = sorted(k for k, g in hardware.catalog().items() if "fp16" in g.peak_flops_per_s)

scenarios = st.builds(
    Scenario,
    batch=st.integers(1, 512),
    seq_len=st.integers(1, 32768),
    weight_dtype=st.sampled_from(["fp16", "int8", "int4"]),
    kv_dtype=st.sampled_from(["fp16", "int8", "fp8"]),
    attention=st.sampled_from(["eager", "flash"]),
    logits=st.sampled_from(["last", "all"]),
    expert_routing=st.sampled_from(["uniform", "balanced", "all"]),
    mla_mode=st.sampled_from(["absorbed", "naive", "decompressed"]),
)


def within_context(model, scenario):
    """Clip seq_len so that a decode step still fits the model's context (longer ones are refused)."""
    return scenario.with_(seq_len=min(scenario.seq_len, model.max_position - 1))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from(["prefill", "decode"]), scenarios)
def test_roofline_invariants(model_key, gpu_key, stage, scenario):
    model, gpu = models.get_model(model_key), hardware.get_accelerator(gpu_key)
    # a sparse-attention model's indexer computes in fp8: a device without fp8 is refused (test_sparse_attention)
    assume(not model.is_sparse_attention or "fp8" in gpu.peak_flops_per_s)
    scenario = within_context(model, scenario)
    rows, total = estimator.analyze(model, gpu, stage, scenario)
    for r in rows:
        assert r["t_s"] == max(r["t_compute_s"], r["t_memory_s"])
        assert r["attainable_flops_per_s"] <= r["peak_flops_per_s"] * (1 + 1e-12)
        assert r["attainable_flops_per_s"] <= r["intensity"] * r["bandwidth_bytes_per_s"] * (1 + 1e-12)
        assert r["bytes"] == pytest.approx(r["bytes_weight"] + r["bytes_act_read"] + r["bytes_act_write"]
                                           + r["bytes_kv_read"] + r["bytes_kv_write"])
        # the bound is the comparison of the same bytes' intensity with the ridge
        ridge = r["peak_flops_per_s"] / r["bandwidth_bytes_per_s"]
        assert (r["bound"] == "compute") == (r["intensity"] > ridge)
        assert r["count"] >= 1 and r["bytes"] > 0 and r["flops"] >= 0
    assert total["t_s"] == pytest.approx(sum(r["t_s"] * r["count"] for r in rows))
    assert 0 <= total["memory_bound_share"] <= 1
    assert total["t_s"] >= max(total["t_compute_s"], total["t_memory_s"]) * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(["prefill", "decode"]), scenarios)
def test_flash_never_moves_more_bytes_than_eager(model_key, stage, scenario):
    model, gpu = models.get_model(model_key), hardware.get_accelerator("h100-sxm")
    scenario = within_context(model, scenario)
    eager = analysis.totals(model, gpu, stage, scenario.with_(attention="eager"))
    flash = analysis.totals(model, gpu, stage, scenario.with_(attention="flash"))
    assert flash["bytes"] <= eager["bytes"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 255))
def test_decode_gemm_intensity_grows_with_batch(model_key, batch):
    model = models.get_model(model_key)
    low = analysis._decode_gemm_intensity(model, Scenario(), batch)
    high = analysis._decode_gemm_intensity(model, Scenario(), batch + 1)
    assert high > low
    # dense fp16 decode GEMM: 2*B*K*N FLOPs over 2*K*N weight bytes + 2*B*(K+N) activation bytes, so AI < B,
    # and ~B while B is small against the GEMM sides (here: 7B-class models, B <= 32)
    if not model.is_moe:
        assert low < batch
        if model.hidden >= 4096 and batch <= 32:
            assert low == pytest.approx(batch, rel=0.03)


@pytest.mark.parametrize("model_key", ["llama-2-7b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b"])
@pytest.mark.parametrize("stage", ["prefill", "decode"])
def test_vectorized_sweep_equals_scalar_totals(model_key, stage):
    model, gpu = models.get_model(model_key), hardware.get_accelerator("a100-sxm-80gb")
    base = Scenario(seq_len=4000)
    batches = np.array([1, 3, 64, 500])
    many = sweeps.evaluate_many(model, gpu, stage, base, batch=batches)
    for i, b in enumerate(batches):
        one = analysis.totals(model, gpu, stage, base.with_(batch=int(b)))
        for key in ("flops", "bytes", "t_s", "memory_bound_share", "footprint_bytes"):
            assert float(many[key][i]) == pytest.approx(one[key], rel=1e-12), key
        assert bool(many["fits"][i]) == one["fits"]
    assert all(math.isfinite(x) for x in many["attention_intensity"])


@pytest.mark.parametrize("model_key, stage, last", [
    ("llama-3.1-8b", "prefill", 131072), ("llama-3.1-8b", "decode", 131071),  # 128k context: decode one short
    ("llama-2-7b", "prefill", 4096), ("llama-2-7b", "decode", 4095),
    ("deepseek-v3", "decode", 131072),  # 163,840 positions: the sweep's own last point
])
def test_the_sequence_sweep_runs_to_the_models_context(model_key, stage, last):
    rows = sweeps.sweep_table(models.get_model(model_key), hardware.get_accelerator("h100-sxm"), stage,
                              Scenario(batch=1, seq_len=1024))
    lengths = [row["seq_len"] for row in rows if row["sweep"] == "seq_len"]
    assert lengths[-1] == last and lengths == sorted(lengths) and len(set(lengths)) == len(lengths)
