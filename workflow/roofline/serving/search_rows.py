"""Rows of the served search (PLAN_COLUMNS + PLAN_SERVING_COLUMNS) and the one line when no candidate qualifies."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..engine.analysis import aggregate
from ..engine.columns import PLAN_COLUMNS, PLAN_SERVING_COLUMNS
from ..engine.graph import build_operators
from ..engine.roofline import dominant_bound
from .candidates import served_kv_dtypes
from .capacity import per_device_bytes
from .framework import balance_label, batch_wait_label, framework_for, held_batch_wait
from .groups import step_yield
from .marks import mark_frontier
from .planner import PlanSettings, ms, nearest_miss, plan_table
from .refusals import link_note
from .search import ServedSearch, ServedWorkload, frontier, search
from .speculative import draft_model, draft_weight_bytes


def rows(result: ServedSearch, indices: Iterable[int]) -> list[dict]:
    """PLAN_COLUMNS + PLAN_SERVING_COLUMNS records of the given candidates."""
    out = []
    w, c = result.workload, result.columns
    for i in indices:
        cand = result.candidates[result.candidate[i]]
        sc, plan = cand.scenario, cand.scenario.parallel
        batch = int(result.concurrency[i])
        decode = _decode_step(result, cand, max(float(c["decode_batch_expected"][i]), 1.0))
        prefill = cand.prefill_plan
        fw = framework_for(result.framework_of(int(result.candidate[i])), cand.gpu, plan.tp,
                           memory_fraction=result.memory_utilization, spec_method=result.workload.spec.method,
                           gpus=plan.devices)
        estimate, table = result.labels[result.candidate[i]]
        footprint, usable = _memory(result, cand, fw, batch, float(c["kv_capacity_requests"][i]))
        row = {
            "model": result.model.key, "gpu": cand.gpu.key, "devices": cand.devices, "tp": plan.tp, "pp": plan.pp,
            "ep": plan.ep, "attention_dp": plan.attention_dp, "batch": batch, "weight_dtype": sc.weight_dtype,
            "act_dtype": sc.act_dtype, "kv_dtype": sc.kv_dtype, "attention": sc.attention, "isl": w.isl, "osl": w.osl,
            "seq_len": w.isl + w.osl // 2, "ttft_s": float(c["ttft_s"][i]), "tpot_s": float(c["tpot_s"][i]),
            "decode_step_s": float(decode["t_s"]), "tokens_per_s": float(c["tokens_per_s"][i]),
            "tokens_per_s_per_device": float(c["tokens_per_s_per_device"][i]),
            "tokens_per_s_per_user": float(c["tokens_per_s_per_user"][i]), "footprint_bytes": footprint,
            "usable_memory_bytes": usable, "fits": bool(c["fits"][i]),
            "bound": dominant_bound(float(decode["memory_bound_share"]), float(decode["network_share"])),
            "memory_bound_share": float(decode["memory_bound_share"]), "network_share": float(decode["network_share"]),
            "ttft_expected_s": float(c["ttft_expected_s"][i]), "tpot_expected_s": float(c["tpot_expected_s"][i]),
            "tokens_per_s_expected": float(c["tokens_per_s_expected"][i]),
            "tokens_per_s_per_device_expected": float(c["tokens_per_s_per_device_expected"][i]),
            "tokens_per_s_per_user_expected": float(c["tokens_per_s_per_user_expected"][i]),
            "estimate": estimate, "framework": fw.key, "calibration": table, "deployment": cand.deployment(),
            "mode": cand.mode, "prefill_workers": cand.prefill_workers,
            "prefill_tp": prefill.tp if prefill else 0, "prefill_pp": prefill.pp if prefill else 0,
            "prefill_ep": prefill.ep if prefill else 0, "prefill_attention_dp": bool(prefill and prefill.attention_dp),
            "decode_workers": cand.decode_workers, "kv_transfer_s": float(c["kv_transfer_s"][i]),
            "limited_by": str(c["limited_by"][i]), "requests_per_s": float(c["tokens_per_s"][i]) / w.osl,
            "requests_per_s_expected": float(c["requests_per_s_expected"][i]),
            "e2e_latency_s": float(c["ttft_s"][i] + (w.osl - 1) * c["tpot_s"][i]),
            "e2e_latency_expected_s": float(c["ttft_expected_s"][i] + (w.osl - 1) * c["tpot_expected_s"][i]),
            "kv_capacity_requests": float(c["kv_capacity_requests"][i]), "prefix_hit": float(w.prefix_hit),
            "length_spread": float(w.length_spread), "spec_method": w.spec.method or "none",
            "accepted_tokens_per_step": step_yield(w.spec.tokens_per_step, w.osl),
            "attention_weight_dtype": sc.attention_weights_dtype, "fp8_scaling": sc.fp8_scaling,
            # the balancing acts where the prompts' plan has attention-DP replicas (the prefill pool's, disaggregated)
            "attention_dp_balance": balance_label(w.dp_balance if (prefill or plan).attention_dp else None),
            "batch_wait": batch_wait_label(held_batch_wait(w.batch_wait, cand.mode, plan)),
        }
        assert tuple(row) == PLAN_COLUMNS + PLAN_SERVING_COLUMNS
        out.append(row)
    return out


def _decode_step(result: ServedSearch, cand, batch: float) -> dict:
    """The engine's totals of one decode step at the expected decode batch and the mean KV length."""
    seq = float(result.workload.isl + result.workload.osl // 2)
    ops = build_operators(result.model, "decode", cand.scenario, batch=batch, seq_len=seq)
    return aggregate(result.model, cand.gpu, "decode", cand.scenario, ops, batch, seq)


def _memory(result: ServedSearch, cand, fw, batch: int, capacity_requests: float) -> tuple[float, float]:
    """(footprint, usable) bytes of the busiest decode device under the framework's memory rule, the rule `fits`
    and kv_capacity_requests come from (capacity.capacity): weights, a full-budget step's activations, the shared
    prefix and each request's KV at the length the framework reserves (its full length under TensorRT-LLM, the
    mean in-flight length under vLLM and SGLang), against the weights, activations and KV budget the rule allows.
    A footprint at every request's full length against memory_utilization x memory called rows that fit too big."""
    w = result.workload
    draft = draft_model(w.spec, result.model)
    weights, activations, held, shared, _ = per_device_bytes(
        result.model, cand.scenario, fw.step_budget(cand.scenario.parallel), fw.reserve_full_length, w.isl, w.osl,
        w.prefix_hit, draft_weight_bytes(w.spec, cand.scenario, result.model),
        (draft, cand.scenario) if draft else None)
    per_worker = min(batch, capacity_requests) / max(cand.decode_workers, 1)
    replicas = cand.scenario.parallel.tp if cand.scenario.parallel.attention_dp else 1
    footprint = weights + activations + shared + held * np.ceil(per_worker / replicas)
    usable = weights + activations + fw.kv_budget_bytes(cand.gpu.memory_bytes, weights, activations)
    return float(footprint), float(usable)


def _more_room(candidates) -> str:
    """'allow more devices (--max-devices), narrower weights or an fp8 KV cache' where a device reaches further
    than its largest engine searched; else why more devices cannot help (refusals.link_note: a device file without
    scaleup_gbps / scaleout_gbps links to none, and --max-devices cannot spread a model over it)."""
    largest: dict[str, tuple] = {}
    for cand in candidates:
        devices = cand.scenario.parallel.devices
        if devices > largest.get(cand.gpu.key, (0, None))[0]:
            largest[cand.gpu.key] = (devices, cand.gpu)
    if not largest or any(gpu.reach > devices for devices, gpu in largest.values()):
        return "allow more devices (--max-devices), narrower weights or an fp8 KV cache"
    notes = "; ".join(link_note(gpu) for _, gpu in largest.values())
    return f"narrower weights or an fp8 KV cache may help ({notes})"


def no_plan_reason(result: ServedSearch, side: str = "expected") -> str:
    """One line saying why no candidate fits and meets the targets on `side` (expected | bound; call when the
    frontier is empty)."""
    w, c = result.workload, result.columns
    ttft, tpot = (c["ttft_expected_s"], c["tpot_expected_s"]) if side == "expected" else (c["ttft_s"], c["tpot_s"])
    fits = np.flatnonzero(c["fits"])
    if fits.size == 0:
        return (f"no plan holds even one request of {w.isl} + {w.osl} tokens in its KV cache on the devices "
                f"allowed; {_more_room(result.candidates)}")
    missed, i, _ = nearest_miss(fits, ttft, tpot, w.ttft_s)
    if missed == "ttft":
        return (f"no plan meets TTFT <= {ms(w.ttft_s)} ({side}): the lowest any plan that fits reaches is "
                f"{ms(ttft[i])}: {_describe(result, i)}")
    return (f"no plan meets TPOT <= {ms(w.tpot_s)} ({side}): the lowest any plan that fits reaches is "
            f"{ms(tpot[i])}: {_describe(result, i)}")


def _describe(result: ServedSearch, i: int) -> str:
    cand = result.candidates[result.candidate[i]]
    sc = cand.scenario
    return (f"{cand.deployment()} at concurrency {int(result.concurrency[i])}, {sc.weight_dtype} weights, "
            f"{sc.kv_dtype} KV cache, {sc.attention} attention")


def plan_table_for(model, settings: PlanSettings) -> tuple[list[dict], str]:
    """(rows, reason) of results/plans/{model}.parquet: the serving model's search when the `plan` section sets a
    mode (each gpu's frontier with on_frontier, recommended and chosen, as planner.plan_table), else the step
    model's (planner.plan_table)."""
    if settings.mode is None:
        return plan_table(model, settings)
    w = settings.workload
    workload = ServedWorkload(isl=w.isl, osl=w.osl, tpot_s=w.tpot_s, ttft_s=w.ttft_s, framework=settings.framework)
    result = search(model, settings.gpus, workload, settings.weight_dtypes or settings.dtypes,
                    settings.kv_dtypes or served_kv_dtypes(settings.dtypes), settings.max_devices, settings.mode,
                    attention_weight_dtype=settings.attention_weight_dtype, fp8_scaling=settings.fp8_scaling)
    overall = frontier(result, side=settings.rank_on)
    if overall.size == 0:
        return [], no_plan_reason(result, settings.rank_on)
    per_gpu = frontier(result, per_gpu=True, side=settings.rank_on)
    return mark_frontier(rows(result, per_gpu), per_gpu, overall, settings.rank_on), ""
