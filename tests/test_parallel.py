"""Deployments over several devices: communication formulas (exact, tiny shapes), sharding of the operator graph,
per-device memory, the auto plan, validation, and the invariants of issue 8."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from roofline.cli import app as cli
from roofline.engine import formulas as f
from roofline.engine.analysis import network_time, resolve_plan, totals
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.hardware import accelerator_from_entry, get_accelerator
from roofline.engine.models import get_model, norm_params, parameter_counts
from roofline.engine.parallel import Parallel, check_plan, weight_params_per_device
from roofline.engine.scenario import Scenario
from roofline.estimate.expected import analyze

H100 = get_accelerator("h100-sxm")


def ops_by_name(model, stage, scenario):
    return {op.name: op for op in build_operators(model, stage, scenario)}


# ------------------------------------------------------------------------------------------ exact formulas
def test_ring_all_reduce_bytes():
    # x[2,4] at 2 bytes over 4 devices: 8 elements, 16 bytes; ring: 2(n-1)/n = 1.5 x 16 = 24 bytes on the link;
    # (n-1)/n x 8 = 6 additions; the input is read (16 B) and the sum written (16 B) once
    c = f.all_reduce(T=2, D=4, n=4, a=2)
    assert (c.network, c.flops, c.act_read, c.act_write, c.bytes) == (24.0, 6.0, 16, 16, 32)


def test_all_gather_all_to_all_and_send_bytes():
    # all-gather of 4 shards of x[2,8] at 2 bytes: the full tensor is 32 B, 3/4 of it (24 B) arrives over the link;
    # the local shard read is 32 / 4 = 8 B, the gathered tensor written 32 B
    c = f.all_gather(T=2, N=8, n=4, a=2)
    assert (c.network, c.act_read, c.act_write) == (24.0, 8.0, 32)
    # all-to-all of 6 rows of width 4 at 1 byte over 3 devices: 24 B, of which 2/3 (16 B) leave the device
    c = f.all_to_all(rows=6, D=4, n=3, a=1)
    assert (c.network, c.act_read, c.act_write) == (16.0, 24, 24)
    # a pipeline hand-over of x[2,4] at 2 bytes: the whole 16 B cross the link
    assert f.p2p_send(T=2, D=4, a=2).network == 16


def test_expected_max_load_of_random_routing():
    assert f.expected_max_load(64, 1) == 64  # one group takes every pair
    # 64 pairs over 4 groups: mean 16, variance 64 x 1/4 x 3/4 = 12; max ~ 16 + sqrt(12 x 2 ln 4) = 16 + 5.768
    assert f.expected_max_load(64, 4) == pytest.approx(16 + math.sqrt(12 * 2 * math.log(4)), rel=1e-12)
    assert f.expected_max_load(1, 64) <= 1  # never more than all pairs


def test_network_bytes_are_not_dram_bytes():
    c = f.all_reduce(T=1, D=1024, n=8, a=2)
    assert c.bytes == c.act_read + c.act_write and c.network > 0


# ---------------------------------------------------------------------------------------------- the graph
def test_single_device_plan_has_no_communication_and_is_the_default():
    model = get_model("llama-3.1-8b")
    for stage in ("prefill", "decode"):
        single = build_operators(model, stage, Scenario())
        explicit = build_operators(model, stage, Scenario(parallel=Parallel(tp=1, pp=1, ep=1)))
        assert single == explicit
        assert not any(op.op_class == "communication" for op in single)


def test_tensor_parallel_splits_heads_columns_and_rows():
    model = get_model("llama-3.1-70b")  # D 8192, H 64, Hkv 8, d 128, F 28672, V 128256
    one = ops_by_name(model, "decode", Scenario())
    four = ops_by_name(model, "decode", Scenario(parallel=Parallel(tp=4)))
    for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"):
        assert four[name].cost.weight * 4 == one[name].cost.weight, name
        assert four[name].cost.flops * 4 == one[name].cost.flops, name
    # decode batch 1: q_proj on one device is [1, 8192] x [8192, 16 heads x 128] = 2 x 8192 x 2048 FLOPs
    assert four["q_proj"].cost.flops == 2 * 8192 * 2048
    # norms and residual adds are replicated: the same cost on each device
    assert four["attn_norm"].cost == one["attn_norm"].cost and four["mlp_add"].cost == one["mlp_add"].cost
    # two all-reduces per layer of x[1, 8192] at 2 bytes over 4 devices: 2 x 3/4 x 16384 B = 24576 B on the link
    for name in ("attn_all_reduce", "mlp_all_reduce"):
        assert four[name].count == 80 and four[name].span == 4 and four[name].cost.network == 24576
    # the vocab-parallel logits come back by an all-gather: 3/4 of [1, 128256] at 2 bytes
    assert four["logits_all_gather"].cost.network == 0.75 * 128256 * 2


def test_kv_heads_are_replicated_when_fewer_than_tp():
    model = get_model("llama-3.1-8b")  # 8 KV heads
    sixteen = ops_by_name(model, "decode", Scenario(parallel=Parallel(tp=16)))  # 32 q heads -> 2 per device
    # 8 KV heads over 16 devices: one KV head per device (each replicated twice)
    assert sixteen["k_proj"].cost.weight == 4096 * 1 * 128 * 2
    assert sixteen["kv_cache_write"].cost.kv_write == 2 * 1 * 128 * 2  # one token, K and V of one head


def test_pipeline_stages_add_sends_and_keep_the_per_token_work():
    model = get_model("llama-3.1-70b")
    one = build_operators(model, "decode", Scenario())
    two = ops_by_name(model, "decode", Scenario(parallel=Parallel(pp=2)))
    assert two["pp_send"].count == 1 and two["pp_send"].span == 2 and two["pp_send"].cost.network == 8192 * 2
    # a token still visits all 80 layers: every non-communication row is unchanged
    assert [op for op in one] == [op for op in two.values() if op.op_class != "communication"]


def test_expert_parallel_routes_the_busiest_group():
    model = get_model("mixtral-8x7b")  # 8 experts, top-2
    sc = Scenario(batch=64, parallel=Parallel(tp=2, ep=2))
    ep = ops_by_name(model, "decode", sc)
    tp = ops_by_name(model, "decode", Scenario(batch=64, parallel=Parallel(tp=2)))
    pairs = 64 * 2
    rows = f.expected_max_load(pairs, 2)
    # the busiest of 2 groups runs its share of the pairs at the full expert width (tp / ep = 1)
    assert ep["expert_gate_proj"].cost.flops == pytest.approx(2 * rows * 4096 * 14336)
    # tensor-parallel experts see all pairs at half the width: fewer FLOPs per device than the busiest EP group
    assert tp["expert_gate_proj"].cost.flops == 2 * pairs * 4096 * 14336 / 2 < ep["expert_gate_proj"].cost.flops
    assert "moe_dispatch" not in ep  # tokens are already on every device after the attention all-reduce


def test_attention_data_parallel_all_to_all():
    model = get_model("deepseek-v3")  # 61 layers, 58 MoE, top-8 of 256, D 7168
    sc = Scenario(batch=64, parallel=Parallel(tp=8, ep=8, attention_dp=True))
    ops = ops_by_name(model, "decode", sc)
    assert "attn_all_reduce" not in ops and "mlp_all_reduce" not in ops
    # each device serves 64 / 8 = 8 sequences; each token goes once to every rank holding one of its 8 experts
    # (a group of 32 per rank, 4 groups per token: f.distinct_ranks = 3.63 of the 8 ranks; 5.29 were the routing
    # uniform), 7/8 of those copies through the link; bf16
    copies = 8 * f.distinct_ranks(256, 8, 8, "uniform", 8, 4)
    assert copies == pytest.approx(8 * 3.629, rel=1e-3) and f.distinct_ranks(256, 8, 8) == pytest.approx(5.2947, 1e-4)
    assert ops["moe_dispatch"].count == 58
    assert ops["moe_dispatch"].cost.network == pytest.approx(7 / 8 * copies * 7168 * 2, rel=1e-12)
    assert ops["moe_combine_all_to_all"].cost == ops["moe_dispatch"].cost
    assert ops["q_a_proj"].cost.flops == 2 * 8 * 7168 * 1536  # 8 tokens, replicated attention weights
    # fp8 activations: the dispatch moves the experts' fp8 inputs (1 byte), the combine their 16-bit outputs
    fp8 = ops_by_name(model, "decode", replace(sc, weight_dtype="fp8", act_dtype="fp8"))
    assert fp8["moe_dispatch"].cost.network == pytest.approx(7 / 8 * copies * 7168 * 1, rel=1e-12)
    assert fp8["moe_combine_all_to_all"].cost.network == pytest.approx(7 / 8 * copies * 7168 * 2, rel=1e-12)
    # the weighted combine reads only the expert rows this device computed (its group's busiest share of the
    # 64 x 8 pairs), not all 8 per token: 2 FLOPs per product, + the shared expert's output
    rows = f.expected_max_load(64 * 8, 8)
    combine = ops["moe_combine"].cost
    assert combine.flops == pytest.approx(2 * rows * 7168 + 8 * 7168, rel=1e-12)
    assert combine.act_read == pytest.approx((rows + 8) * 7168 * 2, rel=1e-12)


def test_distinct_ranks():
    # 4 experts on 2 ranks (2 each), top-2 drawn without replacement: both on one rank with probability
    # C(2,2)/C(4,2) = 1/6 per rank, so 2 (1 - 1/6) = 5/3 ranks are hit
    assert f.distinct_ranks(4, 2, 2) == pytest.approx(5 / 3, rel=1e-12)
    # one rank holds everything; a top-1 token reaches one rank; the balanced worst case is min(k, ep)
    assert f.distinct_ranks(256, 8, 1) == 1.0 and f.distinct_ranks(256, 1, 8) == pytest.approx(1.0, rel=1e-12)
    assert f.distinct_ranks(256, 8, 4, "balanced") == 4 and f.distinct_ranks(256, 8, 16, "balanced") == 8
    # never more than min(k, ep); grows with ep toward k
    values = [f.distinct_ranks(256, 8, ep) for ep in (2, 4, 8, 16, 32, 64)]
    assert values == sorted(values) and all(v <= min(8, ep) for v, ep in zip(values, (2, 4, 8, 16, 32, 64)))


# --------------------------------------------------------------------------------------- per-device memory
def test_weights_per_device_times_tp_is_the_total_of_the_split_layers():
    model = get_model("llama-3.1-70b")
    w = 2  # fp16
    full = totals(model, H100, "decode", Scenario(parallel=Parallel(tp=1)))
    four = totals(model, H100, "decode", Scenario(parallel=Parallel(tp=4)))
    # every matrix is split 4 ways (8 KV heads >= 4); only the norm vectors are replicated
    replicated = (80 * 2 * norm_params(model, 8192) + norm_params(model, 8192)) * w
    assert four["weight_bytes_per_device"] * 4 == pytest.approx(full["weight_bytes"] + 3 * replicated, rel=1e-12)
    assert full["weight_bytes"] == parameter_counts(model)[0] * w == full["weight_bytes_per_device"]
    # the whole deployment's KV cache is the same; each device holds a quarter of the KV heads
    assert four["kv_cache_bytes"] == full["kv_cache_bytes"] == 4 * four["kv_cache_bytes_per_device"]


def test_fits_against_the_usable_memory():
    model = get_model("llama-3.1-70b")
    one = totals(model, H100, "decode", Scenario(parallel=Parallel()))
    assert one["usable_memory_bytes"] == 0.9 * 80 * 2**30
    assert not one["fits"]  # 141 GB of fp16 weights on one 80 GiB device
    assert totals(model, H100, "decode", Scenario(parallel=Parallel(tp=2)))["fits"]


# ------------------------------------------------------------------------------------------ invariants
def test_decode_time_falls_with_tp_until_the_latency_floor():
    model = get_model("llama-3.1-70b")
    times = {tp: totals(model, H100, "decode", Scenario(parallel=Parallel(tp=tp))) for tp in (1, 2, 4, 8)}
    assert times[1]["t_s"] > times[2]["t_s"] > times[4]["t_s"] > times[8]["t_s"]
    # the floor: 2 all-reduces per layer + the embedding all-reduce + the logits all-gather, each at least the
    # link latency (2 us on NVLink 4); the all-reduce time cannot shrink with more devices
    collectives = 2 * 80 + 2
    for tp in (2, 4, 8):
        assert times[tp]["t_network_s"] >= collectives * H100.scaleup_latency_s
    # a small model gains little from tp 4 -> 8 and the network's share grows
    small = {tp: totals(get_model("llama-3.1-8b"), H100, "decode", Scenario(parallel=Parallel(tp=tp)))
             for tp in (4, 8)}
    assert small[8]["network_share"] > small[4]["network_share"]


def test_pcie_is_never_faster_than_nvlink_for_the_same_plan():
    pcie = accelerator_from_entry("h100-pcie-link", {"base": "h100-sxm", "scaleup_link": "PCIe Gen5 x16",
                                                     "scaleup_gbps": 64, "scaleup_latency_us": 10})
    for model_key, stage in (("llama-3.1-70b", "decode"), ("llama-3.1-70b", "prefill"), ("mixtral-8x7b", "decode")):
        for tp in (2, 4, 8):
            sc = Scenario(parallel=Parallel(tp=tp))
            nvlink = totals(get_model(model_key), H100, stage, sc)
            slow = totals(get_model(model_key), pcie, stage, sc)
            assert slow["t_s"] >= nvlink["t_s"] and slow["network_share"] >= nvlink["network_share"]


def test_pipeline_without_micro_batches_is_not_faster_per_token():
    model = get_model("llama-3.1-70b")
    one = totals(model, H100, "decode", Scenario(parallel=Parallel(tp=4)))
    two = totals(model, H100, "decode", Scenario(parallel=Parallel(tp=4, pp=2)))
    assert two["t_s"] > one["t_s"] and two["devices"] == 8 and two["deployment"] == "8 x H100 SXM5 80GB, TP 4, PP 2"
    assert two["tokens_per_s_per_device"] < one["tokens_per_s_per_device"]
    assert two["weight_bytes_per_device"] == pytest.approx(one["weight_bytes_per_device"] / 2, rel=0.02)


def test_collectives_beyond_one_domain_use_the_scale_out_network():
    model = get_model("llama-3.1-70b")
    rows, total = analyze(model, H100, "decode", Scenario(parallel=Parallel(tp=8, pp=2)))
    send = next(r for r in rows if r["op"] == "pp_send")
    reduce = next(r for r in rows if r["op"] == "attn_all_reduce")
    assert send["network_bandwidth_bytes_per_s"] == 50e9 and reduce["network_bandwidth_bytes_per_s"] == 450e9
    # NVSwitch adds in flight: the all-reduce's 8192 x 2 bytes cross once (not the ring's 2 x 7/8 of them)
    assert reduce["bytes_network"] == 8192 * 2 and reduce["t_network_s"] == pytest.approx(2e-6 + 8192 * 2 / 450e9)
    assert send["t_network_s"] == pytest.approx(5e-6 + 8192 * 2 / 50e9)
    assert reduce["bound"] == "network" and math.isnan(next(r for r in rows if r["op"] == "q_proj")
                                                         ["network_bandwidth_bytes_per_s"])


# ------------------------------------------------------------------------------------------ auto and errors
@pytest.mark.parametrize("model, gpu, plan", [
    ("llama-2-7b", "h100-sxm", Parallel()),
    ("llama-3.1-70b", "h100-sxm", Parallel(tp=2)),
    ("llama-3.1-70b", "rtx-a6000", Parallel(tp=4)),
    ("deepseek-v3", "h200-sxm", Parallel(tp=8)),  # 0.68 TB of native fp8 weights: one HGX node
    ("deepseek-v3", "h100-sxm", Parallel(tp=8, pp=2)),  # 84 GB per device at tp 8 > 72 GB usable: two nodes
    ("llama-3.1-70b", "m1-max", Parallel()),  # no link: one device, marked as not fitting
])
def test_auto_picks_the_smallest_plan_that_fits(model, gpu, plan):
    resolved = resolve_plan(get_model(model), get_accelerator(gpu), Scenario(parallel="auto"))
    assert resolved.parallel == plan


@pytest.mark.parametrize("model, gpu, plan, message", [
    ("qwen2.5-7b", "h100-sxm", Parallel(tp=8), "tp 8 does not divide the 28 attention heads"),
    ("mixtral-8x7b", "h100-sxm", Parallel(tp=8, ep=8, attention_dp=True), None),  # valid
    ("llama-2-7b", "h100-sxm", Parallel(tp=2, ep=2), "need a mixture-of-experts model"),
    ("mixtral-8x7b", "h100-sxm", Parallel(tp=4, ep=3), "ep 3 does not divide tp 4"),
    ("llama-2-7b", "m1-max", Parallel(tp=2), "single-device system"),
    ("llama-2-7b", "h100-sxm", Parallel(pp=64), "pp 64 is more than the 32 layers"),
])
def test_invalid_plans_get_one_line(model, gpu, plan, message):
    def check():
        check_plan(get_model(model), get_accelerator(gpu), plan.validate())
    if message is None:
        check()
        return
    with pytest.raises(RooflineInputError, match=message) as error:
        check()
    assert "\n" not in str(error.value)


def test_a_gpu_without_scale_out_refuses_more_devices_than_its_domain():
    box = replace(accelerator_from_entry("box", {"base": "rtx-4090"}), scaleout_bandwidth_bytes_per_s=0.0)
    # a 4-card workstation with no network: 8 devices cannot be reached
    with pytest.raises(RooflineInputError, match="more than one scale-up domain"):
        check_plan(get_model("llama-2-7b"), box, Parallel(tp=8))


def test_cli_tp_acceptance():
    out = cli.run(["totals", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--stage", "decode", "--tp", "4",
                   "--format", "csv"]).splitlines()
    row = dict(zip(out[0].split(","), next(__import__("csv").reader([out[1]]))))
    assert (row["devices"], row["tp"], row["deployment"]) == ("4", "4", "4 x H100 SXM5 80GB, TP 4")
    replicated = (80 * 2 + 1) * 8192 * 2  # the norm vectors of 80 layers and the final norm, fp16
    assert float(row["weight_bytes_per_device"]) == pytest.approx((float(row["weight_bytes"]) - replicated) / 4
                                                                  + replicated, rel=1e-12)
    # --parallel auto and explicit options do not mix; a bad plan is one line
    with pytest.raises(RooflineInputError, match="--parallel: auto cannot be combined with --tp"):
        cli.run(["ops", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "decode", "--parallel", "auto",
                 "--tp", "2"])
    assert cli.main(["ops", "--model", "qwen2.5-7b", "--gpu", "h100-sxm", "--stage", "decode", "--tp", "8"]) == 2
    auto = cli.run(["totals", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--stage", "decode", "--format", "json"])
    assert '"deployment": "2 x H100 SXM5 80GB, TP 2"' in auto


def test_treatments_price_more_devices_and_overlap():
    from roofline.engine.treatments import treatment_table

    model = get_model("llama-3.1-70b")
    rows = {r["treatment"]: r for r in treatment_table(model, H100, "decode", Scenario(parallel=Parallel(tp=2)))}
    more, overlap = rows["more_devices"], rows["overlap_communication"]
    assert more["applicable"] and more["label"].startswith("twice the tensor parallelism: 4 devices (TP 4)")
    four = totals(model, H100, "decode", Scenario(parallel=Parallel(tp=4)))
    assert more["t_s"] == four["t_s"] and more["speedup"] > 1
    base = totals(model, H100, "decode", Scenario(parallel=Parallel(tp=2)))
    # hiding every collective removes exactly the communication rows' time
    assert overlap["t_s"] == pytest.approx(base["t_s"] * (1 - base["network_share"]), rel=1e-12)
    single = {r["treatment"]: r for r in treatment_table(get_model("llama-2-7b"), H100, "decode", Scenario())}
    assert not single["overlap_communication"]["applicable"]
    odd = {r["treatment"]: r for r in treatment_table(get_model("qwen2.5-7b"), H100, "decode",
                                                     Scenario(parallel=Parallel(tp=4)))}
    more = odd["more_devices"]
    assert not more["applicable"] and "does not divide the 28 attention heads" in more["note"]


@pytest.mark.parametrize("model_key", ["llama-2-7b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b",
                                       "gemma-2-9b", "falcon-7b"])
def test_sharding_never_loses_weights_and_each_device_holds_less(model_key):
    model = get_model(model_key)
    total = parameter_counts(model)[0]
    for plan in (Parallel(tp=2), Parallel(tp=4), Parallel(tp=2, pp=2), Parallel(pp=4)):
        try:
            check_plan(model, H100, plan)
        except RooflineInputError:
            continue  # e.g. falcon-7b's 71 heads
        per_device = weight_params_per_device(model, plan)
        # replicated pieces (norms, latent projections, KV heads) only add: devices x share >= all weights
        assert per_device < total <= plan.devices * per_device + 1e-6 * total, plan
        for stage in ("prefill", "decode"):
            row = totals(model, H100, stage, Scenario(batch=4, seq_len=1024, parallel=plan))
            assert row["t_s"] >= row["t_network_s"] >= 0 and 0 <= row["network_share"] <= 1
            assert row["kv_cache_bytes_per_device"] <= row["kv_cache_bytes"]


def test_the_report_says_when_the_link_is_the_bottleneck():
    from roofline.pipeline.tables import job_tables
    from roofline.report.text import network_sentence

    def sentence(gpu_key, plan, stage):
        tables = job_tables(get_model("llama-3.1-70b"), get_accelerator(gpu_key), stage, Scenario(parallel=plan))
        return network_sentence(stage, tables["totals"].iloc[0], tables["ops"], get_accelerator(gpu_key))

    # PCIe cards in prefill: 2048 tokens x 8192 x 2 B = 33.6 MB per all-reduce, 1.5 x that on the link (50.3 MB),
    # at 32 GB/s: 1.57 ms + 10 us latency, 161 of them
    pcie = sentence("rtx-a6000", Parallel(tp=4), "prefill")
    assert "161 all-reduces, each moving 50.3 MB" in pcie and "PCIe Gen4 x16, 32.0 GB/s" in pcie
    assert "set by the link's bandwidth" in pcie
    # NVLink at batch 1: 16.4 kB per all-reduce (8192 x 2 bytes, reduced in the switch) is 36 ns of link time;
    # the 2 us latency sets it
    nvlink = sentence("h100-sxm", Parallel(tp=8), "decode")
    assert "16.4 kB" in nvlink and "set by the 2.00 µs latency" in nvlink and "adds them in flight" in nvlink
    assert sentence("h100-sxm", Parallel(), "decode") == ""  # one device: no collectives
    assert "on each device's link" in pcie
    # a pipeline: the step's all-reduces run through both stages, each device takes its own stage's (it read "on
    # each device's link" for the whole count)
    piped = sentence("rtx-a6000", Parallel(tp=4, pp=2), "prefill")
    assert "all-reduces, each moving 50.3 MB along the step's 2 pipeline stages, each on its devices' links" in piped
    # a device entry with a scale-up bandwidth and no link name: the sentence names "the scale-up link" (it read
    # "(, 32.0 GB/s per direction)")
    from roofline.pipeline.config import resolve_gpu
    unnamed = resolve_gpu("acme-x1", {"memory_gb": 48, "bandwidth_gbps": 768, "peak_tflops": {"fp16": 181},
                                      "scaleup_gbps": 32, "scaleup_domain": 8})
    tables = job_tables(get_model("llama-3.1-70b"), unnamed, "prefill", Scenario(parallel=Parallel(tp=4)))
    text = network_sentence("prefill", tables["totals"].iloc[0], tables["ops"], unnamed)
    assert "(the scale-up link, 32.0 GB/s per direction)" in text and "(, " not in text


# ------------------------------------------------------------------------------ collectives across domains
def _two_links():
    """8 devices per domain at 100 B/s each way, 10 B/s per device beyond; no latency (exact integers); no
    in-network reduction (the ring's bytes)."""
    return replace(H100, scaleup_bandwidth_bytes_per_s=100.0, scaleup_latency_s=0.0, scaleup_domain=8,
                   scaleout_bandwidth_bytes_per_s=10.0, scaleout_latency_s=0.0, in_network_reduction=False)


def test_a_collective_across_domains_uses_both_links_and_the_cut():
    from roofline.engine.collectives import collective_seconds, split_bytes

    gpu = _two_links()
    # all-reduce of S = 1600 bytes over 16 = 2 domains x 8: the flat ring moves 2 x 15/16 x 1600 = 3000 bytes per
    # device; 2 x 1/2 x 1600 / 8 = 200 of them must leave the domain on each NIC (20 s at 10 B/s); all 3000 on both
    # links together take 3000 / 110 = 27.3 s: the bound is 27.3 s (the flat ring through the NIC: 300 s)
    assert split_bytes("all_reduce", 3000.0, 16.0, 8.0) == pytest.approx((3000.0, 200.0), rel=1e-12)
    assert collective_seconds(gpu, "all_reduce", 3000.0, 16) == pytest.approx(3000 / 110, rel=1e-12)
    # all-gather of a 1600-byte output: 1500 bytes in all (13.6 s), a cut of 1/2 x 1600 / 8 = 100 (10 s)
    assert collective_seconds(gpu, "all_gather", 1500.0, 16) == pytest.approx(1500 / 110, rel=1e-12)
    # all-to-all of 1600 bytes of copies: a token crosses once per remote domain at best, 8/16 x 1600 / 8 = 100
    # bytes (10 s), beside 7/16 x 1600 = 700 inside (800 in all: 7.3 s): 10 s (flat: 150 s)
    assert split_bytes("all_to_all", 1500.0, 16.0, 8.0) == pytest.approx((800.0, 100.0), rel=1e-12)
    assert collective_seconds(gpu, "all_to_all", 1500.0, 16) == pytest.approx(10.0, rel=1e-12)
    # inside one domain, and for a pipeline hand-over, every byte is on the span's link, as before
    assert collective_seconds(gpu, "all_reduce", 1750.0, 8) == pytest.approx(17.5, rel=1e-12)
    assert collective_seconds(gpu, "p2p", 1000.0, 16) == pytest.approx(100.0, rel=1e-12)
    # arrays give what scalars give
    assert collective_seconds(gpu, "all_reduce", np.array([3000.0, 1500.0]), 16) == pytest.approx(
        [3000 / 110, 1500 / 110], rel=1e-12)


def test_a_link_that_reduces_in_flight_moves_an_all_reduce_once():
    from roofline.engine.collectives import collective_seconds, split_bytes

    gpu = replace(_two_links(), in_network_reduction=True)
    # inside one domain of 8: an all-reduce of S = 1000 bytes (the ring's 2 x 7/8 x 1000 = 1750) sends S and
    # receives S per device: 10 s at 100 B/s (the ring 17.5 s); all-gather and pipeline sends are as before
    assert collective_seconds(gpu, "all_reduce", 1750.0, 8) == pytest.approx(10.0, rel=1e-12)
    assert collective_seconds(gpu, "all_gather", 1750.0, 8) == pytest.approx(17.5, rel=1e-12)
    assert collective_seconds(gpu, "p2p", 1000.0, 8) == pytest.approx(10.0, rel=1e-12)
    # across 2 domains (S = 1600, ring 3000): 1600 in all on both links (14.5 s), the cut of 200 per NIC stays
    # (20 s: the scale-out network is not assumed to reduce): 20 s
    assert split_bytes("all_reduce", 3000.0, 16.0, 8.0, True) == pytest.approx((1600.0, 200.0), rel=1e-12)
    assert collective_seconds(gpu, "all_reduce", 3000.0, 16) == pytest.approx(20.0, rel=1e-12)
    # the catalog says which links reduce: NVSwitch 3 and later (H100/H200/B200 HGX, GB200 NVL72), not the A100's
    assert H100.in_network_reduction and get_accelerator("gb200-gpu").in_network_reduction
    assert not get_accelerator("a100-sxm-80gb").in_network_reduction
    assert not get_accelerator("mi300x").in_network_reduction
    listing = cli.run(["list", "gpus"]).splitlines()
    assert "NVLink 4 450 GB/s x8 (reduces in flight)" in next(line for line in listing if line.startswith("h100-sxm "))
    assert "(reduces" not in next(line for line in listing if line.startswith("a100-sxm-80gb "))


def test_the_all_reduce_bound_is_at_most_every_measured_collective_of_the_shipped_tables():
    # the 8-GPU H100 all-reduce of 1 GiB took 4.01 ms in TensorRT-LLM's table, below the ring's 2 x 7/8 x 1 GiB at
    # 450 GB/s (4.18 ms): in-switch reduction (NVLS) at work; the bound is the tensor once, 2.39 ms
    from roofline.estimate.calibration import collective_bound_seconds, read_table, shipped_path

    assert collective_bound_seconds(H100, "all_reduce", 8, 1 << 29) == pytest.approx(2e-6 + 2 ** 30 / 450e9)
    for chip in ("h100-sxm", "h200-sxm", "b200"):
        gpu = get_accelerator(chip)
        for row in read_table(str(shipped_path(chip, "trtllm"))):
            if row["op_class"] == "communication":
                bound = collective_bound_seconds(gpu, row["op"], int(row["span"]), row["m"], row["dtype"])
                assert bound <= row["measured_s"], (chip, row["op"], row["span"], row["m"])


def test_tensor_parallelism_across_two_nodes_prices_its_all_reduce_on_both_links():
    # Llama-3.1-70B prefill of 2048 tokens at TP 16 on 8-GPU H100 nodes: each all-reduce of S = 2048 x 8192 x 2
    # bytes moves S per device in all (NVSwitch reduces in flight), on NVLink (450 GB/s) and the NIC (50 GB/s)
    # together: 2 + 67.1 us; the S / 8 that must leave each node per NIC takes 5 + 83.9 us; the flat ring through
    # the NIC 5 + 1,258 us. The operator row's bandwidth is the effective one: t_network = latency + bytes / bandwidth
    model, sc = get_model("llama-3.1-70b"), Scenario(batch=1, seq_len=2048, parallel=Parallel(tp=16))
    op = ops_by_name(model, "prefill", sc)["attn_all_reduce"]
    S = 2048 * 8192 * 2
    bandwidth, t_network = network_time(H100, op)
    both = H100.scaleup_latency_s + S / 500e9
    cut = H100.scaleout_latency_s + S / 8 / 50e9
    assert t_network == pytest.approx(max(both, cut), rel=1e-9) and cut > both
    ring = network_time(replace(H100, in_network_reduction=False), op)[1]  # without it: 2 + 125.8 us, both links
    assert ring == pytest.approx(H100.scaleup_latency_s + 2 * 15 / 16 * S / 500e9, rel=1e-9)
    assert t_network < H100.scaleout_latency_s + op.cost.network / 50e9
    assert H100.scaleout_latency_s + op.cost.network / bandwidth == pytest.approx(t_network, rel=1e-9)
    assert network_time(H100, ops_by_name(model, "prefill", replace(sc, parallel=Parallel(tp=8)))[
        "attn_all_reduce"])[0] == 450e9  # inside a node: NVLink's own


def _ranks_by_enumeration(E, k, ep, groups, per_token):
    """Mean ranks hit over every equally likely choice: per_token of the groups, then k of their experts."""
    from itertools import combinations

    size, per_rank, total, count = E // groups, E // ep, 0, 0
    for taken in combinations(range(groups), per_token):
        pool = [e for g in taken for e in range(g * size, (g + 1) * size)]
        for experts in combinations(pool, k):
            total += len({e // per_rank for e in experts})
            count += 1
    return total / count


def test_group_limited_routing_reaches_fewer_ranks():
    # 4 experts in 2 groups on 2 ranks (a group each), one group per token: both experts on one rank, always
    assert f.distinct_ranks(4, 2, 2, "uniform", groups=2, per_token=1) == pytest.approx(1.0, rel=1e-12)
    # 8 experts in 4 groups on 2 ranks (two groups each), 2 groups per token, top-2 from their 4 experts:
    # the rank's groups taken j = 0, 1, 2 with odds 1/6, 4/6, 1/6, then missed with odds 1, 1/6, 0: 5/18 per rank,
    # 2 (1 - 5/18) = 13/9 ranks hit
    assert f.distinct_ranks(8, 2, 2, "uniform", groups=4, per_token=2) == pytest.approx(13 / 9, rel=1e-12)
    for E, k, ep, groups, per_token in ((8, 2, 2, 4, 2), (16, 3, 4, 4, 2), (16, 3, 8, 4, 2), (12, 2, 6, 3, 2)):
        assert f.distinct_ranks(E, k, ep, "uniform", groups, per_token) == pytest.approx(
            _ranks_by_enumeration(E, k, ep, groups, per_token), rel=1e-12)
    # DeepSeek-V3 (256 experts, top-8 from 4 of 8 groups): at most 4 ranks at EP 8, 3.63 on average (5.29 uniform)
    deepseek = get_model("deepseek-v3")
    assert (deepseek.expert_groups, deepseek.groups_per_token) == (8, 4)
    assert f.distinct_ranks(256, 8, 8, "uniform", 8, 4) == pytest.approx(3.629, abs=1e-3)
    ops = ops_by_name(deepseek, "decode", Scenario(batch=64, parallel=Parallel(tp=8, ep=8, attention_dp=True)))
    assert ops["moe_dispatch"].cost.network == pytest.approx(
        7 / 8 * 8 * f.distinct_ranks(256, 8, 8, "uniform", 8, 4) * 7168 * 2, rel=1e-12)


def test_routing_groups_come_from_the_checkpoint_and_are_checked():
    import json
    from pathlib import Path

    from roofline.engine.hf_config import model_from_hf_dict

    cfg = json.loads((Path(__file__).parent / "data" / "hf_configs" / "deepseek-v3.json").read_text())
    spec = model_from_hf_dict(cfg, "ds")
    assert (spec.expert_groups, spec.groups_per_token) == (8, 4)  # n_group, topk_group
    plain = model_from_hf_dict({**cfg, "n_group": 1, "topk_group": 1}, "k2")  # Kimi-K2, GLM-4.5: plain top-k
    assert (plain.expert_groups, plain.groups_per_token) == (1, 0)
    with pytest.raises(RooflineInputError, match="n_group"):
        model_from_hf_dict({**cfg, "n_group": 0}, "bad")
    with pytest.raises(RooflineInputError, match="expert_groups 7 must divide the 256 experts"):
        replace(spec, expert_groups=7).validate()
    with pytest.raises(RooflineInputError, match="at least groups_per_token"):
        replace(spec, groups_per_token=9).validate()


def test_routing_groups_must_hold_the_top_k():
    import json
    from pathlib import Path

    from roofline.engine.hf_config import model_from_hf_dict

    cfg = json.loads((Path(__file__).parent / "data" / "hf_configs" / "deepseek-v3.json").read_text())
    # 64 groups of 4 experts, one group per token: 4 < top-8, a one-line error (it was a ZeroDivisionError)
    with pytest.raises(RooflineInputError, match="top_k 8 experts do not fit in groups_per_token 1 of 64"):
        model_from_hf_dict({**cfg, "n_group": 64, "topk_group": 1}, "bad")
