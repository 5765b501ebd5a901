"""The search's step tables (roofline.serving.step_tables): pieces shared between scenarios, lookups batched.

Two checks: the engine invariant the sharing rests on (a piece's operators are the same in every scenario that
shares its key, on every catalog model), and the tables themselves against the unbatched reference (each part's
operators priced on one device at a time: roofline.serving.steps._sum, the path of a single step).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from roofline.engine.graph import build_operators, scenario_dtypes
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import catalog, get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import ATTENTION_IMPLS, Scenario
from roofline.serving.candidates import activation_dtype
from roofline.serving.step_tables import PARTS, PIECES, _Pieces, tabulate_many
from roofline.serving.steps import LOGIT_OPS, Mix, Pricing, _queries, _sum, grid, physical, uncached_attention

WEIGHTS = ("fp16", "fp8", "int4")
KVS = ("fp16", "fp8", "int8")


def _recipes(plan: Parallel) -> list[Scenario]:
    return [Scenario(weight_dtype=w, act_dtype=activation_dtype(w), kv_dtype=kv, attention=a, parallel=plan)
            for w in WEIGHTS for kv in KVS for a in ATTENTION_IMPLS]


def _signature(ops) -> list:
    return [(op.name, op.op_class, op.count, op.compute_dtype, op.span,
             tuple(np.asarray(value, dtype=float).tobytes() for value in op.cost)) for op in ops]


@pytest.mark.parametrize("key", sorted(catalog()))
def test_scenarios_that_share_a_piece_have_the_same_operators(key):
    # the sharing is exact only if a piece's operators do not depend on what its key leaves out (the KV dtype
    # beyond the activation dtype it chooses, the attention kernel, the pipeline depth outside the stage piece,
    # expert parallelism outside the core): check every pair on every catalog model, the plans of one tp together
    # (they differ in pp and ep)
    model = get_model(key)
    tps = [[Parallel(), Parallel(pp=2)],
           [Parallel(tp=2), Parallel(tp=2, pp=2)] + ([Parallel(tp=2, ep=2)] if model.n_experts else [])]
    shared = 0
    for plans in tps:
        pieces = _Pieces(model, Mix(kv_len=1536.0, prompt=1024.0), grid(64.0), grid(16.0), "")
        seen: dict[tuple, tuple] = {}
        for plan in plans:
            for scenario in _recipes(plan):
                resolved = scenario.for_model(model)
                for name in PIECES:
                    ops = pieces.ops(name, resolved)[0]
                    first = seen.setdefault(pieces.key(name, resolved), (plan, _signature(ops)))
                    assert _signature(ops) == first[1], (key, plan, scenario, name)
                    shared += first[0] != plan
    assert shared  # plans of one tp share pieces


def _reference(model, gpu, scenario, mix, tokens, sequences, framework):
    """(bound, expected) of each part of one (scenario, device), every part's operators priced together on the
    device alone (no sharing, no batching): steps._sum, the single-step path."""
    scenario = scenario.for_model(model)
    T, D = grid(tokens), grid(sequences)
    decode_ops = build_operators(model, "decode", scenario, batch=T, seq_len=1.0)
    build = {
        "tokenwise": [op for op in decode_ops if op.op_class != "attention" and op.name not in LOGIT_OPS],
        # the routed experts apart under data-parallel attention only (else no step needs them apart)
        "experts": [op for op in decode_ops if scenario.parallel.attention_dp
                    and (op.name.startswith("expert_") or op.name == "moe_combine")],
        "logits": [op for op in decode_ops if op.name in LOGIT_OPS],
        "attention": [_queries(op, float(mix.queries)) for op in build_operators(
            model, "decode", scenario, batch=D, seq_len=float(mix.kv_len)) if op.op_class == "attention"],
        "prompt": uncached_attention(model, scenario, float(mix.prompt), float(mix.prefix)),
    }
    decode = Pricing(model, scenario, "decode", float(mix.kv_len), framework)
    prefill = Pricing(model, scenario, "prefill", float(mix.prompt), framework)
    priced = {part: _sum(gpu, ops, True, prefill if part == "prompt" else decode)[:2] for part, ops in build.items()}
    # the tables hold each grid part's expected times to what an engine can do (steps.physical), never below the bound
    points = {"tokenwise": T, "logits": T, "experts": T, "attention": D}
    return {part: (bound, np.maximum(physical(expected, points[part]), bound) if part in points else expected)
            for part, (bound, expected) in priced.items()}


@pytest.mark.parametrize("framework", ["vllm", "trtllm"])  # trtllm: fusions with the KV-cache write
@pytest.mark.parametrize("key", ["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "qwen3-next-80b-a3b", "gemma-3-27b",
                                 "gpt-oss-20b"])
def test_batched_tables_equal_the_single_step_pricing(key, framework):
    # h200-sxm and b200 have measured tables of their own, mi300x and h100-nvl share the pooled fallback
    model = get_model(key)
    gpus = [get_accelerator(k) for k in ("h200-sxm", "b200", "mi300x", "h100-nvl")]
    # pp 2: its attention pieces take pp 1's kernel times, scaled (where the stage's counts are proportional)
    plans = [Parallel(), Parallel(tp=4), Parallel(pp=2)]
    if model.n_experts:  # data-parallel attention: 4 replicas, the experts' part apart
        plans += [Parallel(tp=4, ep=4), Parallel(tp=4, ep=4, attention_dp=True)]
    scenarios = [s for plan in plans for s in _recipes(plan) if s.weight_dtype != "int4"]
    mix = Mix(kv_len=1536.0, prompt=1024.0, prefix=256.0, queries=2.0)
    tables = tabulate_many(model, {s: gpus for s in scenarios}, mix, 4096.0, 256.0, framework=framework)
    S, S0 = 1024.0, 256.0
    for scenario in scenarios[::5]:
        for gpu in gpus:
            parts = tables.of(scenario, gpu.key)
            reference = _reference(model, gpu, scenario, mix, 4096.0, 256.0, framework)
            for part in ("tokenwise", "logits", "attention", "experts"):
                for side, value in zip(("bound", "expected"), reference[part]):
                    np.testing.assert_allclose(getattr(parts, f"{part}_{side}"), value, rtol=1e-12, atol=0,
                                               err_msg=f"{key} {scenario} {gpu.key} {part} {side}")
            replicas = scenario.parallel.tp if scenario.for_model(model).parallel.attention_dp else 1
            per_token = 1 / (S - S0) / replicas  # the rows are the uncached queries' share already
            assert parts.prompt_bound == pytest.approx(float(reference["prompt"][0]) * per_token, rel=1e-12)
            assert parts.prompt_expected == pytest.approx(float(reference["prompt"][1]) * per_token, rel=1e-12)
            assert parts.replicas == replicas


def test_every_part_is_made_of_pieces():
    # the routed experts are a piece of the token-wise part and a part of their own (the share the ranks of
    # data-parallel attention compute together); every other piece belongs to one part
    assert sorted(name for names in PARTS.values() for name in names) == sorted(
        ["attention", "core", "experts", "experts", "kv_write", "logits", "prompt", "stage"])
    assert PARTS["experts"] == ("experts",) and "experts" in PARTS["tokenwise"]


def test_a_piece_shared_by_scenarios_is_priced_once():
    # 3 KV dtypes x 2 attention kernels of one weight dtype: the core piece is priced once per 16-bit activation
    # dtype those choose (graph.scenario_dtypes), not once per scenario
    model = get_model("llama-3.1-8b")
    pieces = _Pieces(model, Mix(), grid(8.0), grid(8.0), "")
    scenarios = [replace(s, parallel=Parallel()) for s in _recipes(Parallel()) if s.weight_dtype == "fp8"]
    keys = {pieces.key("core", s.for_model(model)) for s in scenarios}
    assert len(scenarios) == 6
    assert len(keys) == len({scenario_dtypes(s.for_model(model)).act16 for s in scenarios}) < 6

