"""Weight parts stored apart from weight_dtype: routers at 16 bits always, attention projections at
attention_weight_dtype (roofline.engine.parts), in the operator rows, the resident weights and the expected-time
lookups alike."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from roofline.engine import hardware, models
from roofline.engine.analysis import prepare, weight_bytes, weight_bytes_per_device
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.models import mixer_params, router_params
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.estimate.step import operand_dtype

QWEN_MOE = "qwen3-30b-a3b"  # hidden 2048, 128 experts, 48 MoE layers, 32 query / 4 KV heads of 128


def _ops(model_key, scenario, stage="decode"):
    model = models.get_model(model_key)
    scenario = prepare(model, hardware.get_accelerator("b200"), stage, scenario)
    return {op.name: op for op in build_operators(model, stage, scenario)}, scenario


def test_router_stays_16_bit_in_an_fp8_scenario():
    ops, _ = _ops(QWEN_MOE, Scenario(batch=1, seq_len=128, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8"))
    router = ops["router"]
    # one token x [2048 x 128] at 2 bytes per weight: 2048 x 128 x 2 = 524288 bytes, its input 2048 x 2 = 4096 bytes,
    # 2 x 2048 x 128 = 524288 FLOPs, at the 16-bit peak (the scenario's 16-bit type is bf16: no 16-bit field)
    assert router.cost.weight == 524288
    assert router.cost.act_read == 4096
    assert router.cost.flops == 524288
    assert router.compute_dtype == "bf16"
    # the attention stays fp8 (its input 2048 x 1 byte) and so do the experts: expert_gate_proj's weights are
    # 1 byte each, [2048 x 768] per expert
    assert ops["q_proj"].compute_dtype == "fp8" and ops["q_proj"].cost.act_read == 2048
    gate = ops["expert_gate_proj"]
    assert gate.compute_dtype == "fp8" and gate.cost.weight % (2048 * 768) == 0


def test_router_follows_a_16_bit_or_wider_weight_dtype():
    ops, _ = _ops(QWEN_MOE, Scenario(batch=1, seq_len=128, weight_dtype="fp32", act_dtype="fp32",
                                     kv_dtype="fp32"))
    assert ops["router"].cost.weight == 2048 * 128 * 4 and ops["router"].compute_dtype == "fp32"


def test_attention_projections_at_their_own_dtype():
    sc = Scenario(batch=2, seq_len=128, weight_dtype="nvfp4", act_dtype="nvfp4", kv_dtype="fp8",
                  attention_weight_dtype="bf16")
    ops, _ = _ops(QWEN_MOE, sc)
    q = ops["q_proj"]
    # 2 tokens x [2048 x 32 x 128]: weights 2048 x 4096 x 2 = 16777216 bytes, input 2 x 2048 x 2 = 8192 bytes,
    # an unquantized bf16 GEMM
    assert q.cost.weight == 16777216 and q.cost.act_read == 8192 and q.compute_dtype == "bf16"
    # the experts keep nvfp4 (4.5 bits: 0.5625 byte) and fp4 compute
    gate = ops["expert_gate_proj"]
    assert gate.compute_dtype == "fp4"
    assert operand_dtype(q, _ops(QWEN_MOE, sc)[1], "gemm") == "bf16"
    assert operand_dtype(ops["router"], _ops(QWEN_MOE, sc)[1], "gemm") == "bf16"
    assert operand_dtype(gate, _ops(QWEN_MOE, sc)[1], "gemm") == "nvfp4"


def test_resident_weights_count_each_part_at_its_width():
    model = models.get_model("deepseek-v3")
    base = Scenario(weight_dtype="nvfp4", act_dtype="nvfp4", kv_dtype="fp8")
    sixteen = base.with_(attention_weight_dtype="bf16")
    # only the attention blocks move: 2 - 0.5625 bytes more per parameter
    moved = weight_bytes(model, sixteen) - weight_bytes(model, base)
    assert moved == pytest.approx(mixer_params(model) * (2 - 0.5625), rel=1e-12)
    # the routers are 16-bit in both: 58 MoE layers x (7168 x 256 + 256 bias) parameters
    assert router_params(model) == 58 * (7168 * 256 + 256)
    # per device under TP 8: MLA's latent projections whole on every device (per layer 7168 x (512 + 64) + 512
    # + 7168 x 1536 + 1536 parameters), the rest of the attention split 8 ways
    plan = Parallel(tp=8, ep=8)
    per_device = (weight_bytes_per_device(model, sixteen.with_(parallel=plan))
                  - weight_bytes_per_device(model, base.with_(parallel=plan)))
    latent = 61 * (7168 * (512 + 64) + 512 + 7168 * 1536 + 1536)
    assert per_device == pytest.approx((latent + (mixer_params(model) - latent) / 8) * (2 - 0.5625), rel=1e-12)


def test_attention_weight_dtype_equal_to_weight_dtype_changes_nothing():
    sc = Scenario(batch=4, seq_len=256, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
    same = sc.with_(attention_weight_dtype="fp8")
    assert _ops("llama-3.1-8b", sc)[0] == _ops("llama-3.1-8b", same)[0]


def test_bad_attention_weight_dtype_is_one_line():
    with pytest.raises(RooflineInputError, match=r"scenario\.attention_weight_dtype: unknown value 'bf17'"):
        Scenario(attention_weight_dtype="bf17").validate()
    run = subprocess.run([sys.executable, "-m", "roofline", "totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                          "--stage", "decode", "--attention-weight-dtype", "fp9"], capture_output=True, text=True)
    assert run.returncode == 2 and "--attention-weight-dtype" in run.stderr and "fp8" in run.stderr


def test_cli_takes_the_attention_weight_dtype():
    def tpot(*extra):
        run = subprocess.run([sys.executable, "-m", "roofline", "totals", "--model", "deepseek-v3", "--gpu", "b200",
                              "--stage", "decode", "--tp", "8", "--ep", "8", "--weight-dtype", "nvfp4",
                              "--act-dtype", "nvfp4", "--kv-dtype", "fp8", "--format", "csv", *extra],
                             capture_output=True, text=True, check=True)
        header, row = run.stdout.splitlines()[:2]
        return dict(zip(header.split(","), row.split(",")))
    base, sixteen = tpot(), tpot("--attention-weight-dtype", "bf16")
    # more resident weights and more bytes per step: a larger bound at batch 1
    assert float(sixteen["weight_bytes"]) > float(base["weight_bytes"])
    assert float(sixteen["tpot_s"]) > float(base["tpot_s"])


def test_lookups_read_a_16_bit_part_at_its_input_width():
    # NVFP4 activations (0.5625 byte) but a 16-bit router and attention: the router GEMM's outputs per row are its
    # 128 experts (the width of its bf16 input), not 128 x 0.5625 / 2 = 36 (below GEMV_OUTPUTS, the element-wise curve)
    from roofline.estimate.step import gemm_outputs

    sc = Scenario(batch=2, seq_len=128, weight_dtype="nvfp4", act_dtype="nvfp4", kv_dtype="fp8",
                  attention_weight_dtype="bf16")
    ops, resolved = _ops(QWEN_MOE, sc)
    assert gemm_outputs(ops["router"], resolved, lambda v: v) == pytest.approx(128)
    assert gemm_outputs(ops["q_proj"], resolved, lambda v: v) == pytest.approx(32 * 128)
    assert gemm_outputs(ops["expert_gate_proj"], resolved, lambda v: v) == pytest.approx(768)


def test_naive_mla_reexpands_the_latent_with_16_bit_weights():
    # kv_b_proj [512 x 128 x (128 + 128)] re-expands the cached latent each step: bf16, 2 bytes per weight
    sc = Scenario(batch=1, seq_len=128, weight_dtype="nvfp4", act_dtype="nvfp4", kv_dtype="fp8",
                  attention_weight_dtype="bf16", mla_mode="naive")
    ops, _ = _ops("deepseek-v3", sc)
    assert ops["kv_b_proj"].cost.weight == 512 * 128 * 256 * 2 and ops["kv_b_proj"].compute_dtype == "bf16"


def test_quantization_treatments_quantize_the_attention_too():
    from roofline.engine.treatments import treatment_table

    model, gpu = models.get_model("llama-3.1-8b"), hardware.get_accelerator("h100-sxm")
    sc = Scenario(batch=1, seq_len=1024, weight_dtype="fp16", act_dtype="fp16", kv_dtype="fp16",
                  attention_weight_dtype="bf16")
    rows = {r["treatment"]: r for r in treatment_table(model, gpu, "decode", sc)}
    plain = {r["treatment"]: r for r in treatment_table(model, gpu, "decode", sc.with_(attention_weight_dtype=""))}
    # the int4 and fp8 treatments quantize every projection: the same step whatever the attention's own dtype was
    for key in ("weight_int4", "fp8_compute"):
        assert rows[key]["t_s"] == pytest.approx(plain[key]["t_s"], rel=1e-12), key


def test_the_shared_expert_gate_is_a_16_bit_router():
    ops, _ = _ops("qwen3-next-80b-a3b", Scenario(batch=1, seq_len=128, weight_dtype="fp8", act_dtype="fp8",
                                                  kv_dtype="fp8"))
    # Linear(2048, 1): 2048 weights at 2 bytes
    assert ops["shared_expert_gate"].cost.weight == 2048 * 2


def test_the_search_takes_an_attention_weight_dtype(capsys):
    from roofline.cli.app import main

    argv = ["plan", "--model", "deepseek-v3", "--gpu", "b200", "--isl", "1024", "--osl", "1024", "--max-devices", "8",
            "--weight-dtypes", "nvfp4", "--kv-dtypes", "fp8", "--top", "1", "--format", "json"]
    assert main(argv) == 0
    quantized = json.loads(capsys.readouterr().out)[0]
    assert main([*argv, "--attention-weight-dtype", "bf16"]) == 0
    sixteen = json.loads(capsys.readouterr().out)[0]
    assert quantized["attention_weight_dtype"] == "nvfp4" and sixteen["attention_weight_dtype"] == "bf16"
    # 16-bit attention weights: more bytes per step, a larger decode bound at the same deployment and batch
    import roofline

    rows = {aw: roofline.plan("deepseek-v3", "b200", isl=1024, osl=1024, max_devices=8, weight_dtypes=["nvfp4"],
                              kv_dtypes=["fp8"], top=0, attention_weight_dtype=aw or None) for aw in ("", "bf16")}
    keys = ["deployment", "batch", "attention"]
    both = rows[""].merge(rows["bf16"], on=keys, suffixes=("_q", "_16"))
    assert len(both) > 0 and (both["tpot_s_16"] > both["tpot_s_q"]).all()
    # the previous release's step model has no such option
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "512", "--osl", "256",
                 "--prefill", "separate", "--attention-weight-dtype", "bf16"]) == 2
    assert "--attention-weight-dtype: only with the serving model" in capsys.readouterr().err


def test_quantization_treatments_keep_the_parts_a_checkpoint_keeps_narrower():
    # gpt-oss-120b's MXFP4 experts widened to int8 / fp8 had shown as 0.66x and 0.70x "speed-ups" of prefill
    from roofline.engine.treatments import treatment_table

    model, gpu = models.get_model("gpt-oss-120b"), hardware.get_accelerator("h200-sxm")
    scenario = Scenario(weight_dtype="native", batch=1, seq_len=2048).for_model(model)
    for stage in ("prefill", "decode"):
        rows = {row["treatment"]: row for row in treatment_table(model, gpu, stage, scenario)}
        for key in ("weight_int8", "fp8_compute"):
            assert rows[key]["speedup"] >= 1.0, (stage, key, rows[key]["speedup"])
    decode = {row["treatment"]: row for row in treatment_table(model, gpu, "decode", scenario)}
    assert decode["weight_int8"]["speedup"] > 1.1  # the 16-bit attention and embeddings' share of the bytes
