"""Why `roofline serve` refuses a workload, in one line each: not one request in the KV cache (and what could make
room), more closed-loop users than the deployment runs at once, an engine whose framework reserves every byte.
`served` is a roofline.serving.serve.Served, `workload` its Workload (not imported: serve imports this module).
"""
from __future__ import annotations

from ..engine.analysis import deployment_label
from ..engine.dtypes import DTYPE_BYTES
from ..engine.errors import RooflineInputError
from ..engine.parallel import Parallel
from .candidates import MIN_KV_BYTES
from .framework import RUNNING_CAP, Framework, framework_for, sglang_chunk_limit


def _remedies(served, narrower_kv: bool) -> str:
    """'use more devices, narrower weights or an fp8 KV cache': more devices where the device links to more than
    the plan's, narrower weights unless every weight is already 4-bit, an fp8 cache where `narrower_kv`; and where
    the device's links end at the plan, what would let it spread (link_note)."""
    scenario = served.scenario
    dtypes = {scenario.weight_dtype, scenario.expert_weight_dtype or scenario.weight_dtype,
              scenario.attention_weight_dtype or scenario.weight_dtype}
    linked = _spreads(served)
    options = (["more devices"] if linked else []) + (
        [] if all(DTYPE_BYTES.get(dtype, 2.0) <= 0.5 for dtype in dtypes) else ["narrower weights"]) + (
        ["an fp8 KV cache"] if narrower_kv else [])
    said = "use " + " or ".join([", ".join(options[:-1]), options[-1]] if len(options) > 1 else options) \
        if options else ""
    return said if linked else (f"{said} ({link_note(served.gpu)})" if said else link_note(served.gpu))


def _spreads(served) -> bool:
    """Whether more devices can hold more: the device links to more than the plan's."""
    return served.gpu.reach > served.plan.devices


def link_note(gpu) -> str:
    """Why more devices cannot help `gpu`, and what its entry would need: a device file without links serves on
    itself alone; one with a scale-up domain and no scale-out network, within that domain."""
    if gpu.scaleup_bandwidth_bytes_per_s > 0:
        return (f"{gpu.key} links to no more than {gpu.scaleup_domain} devices: a larger scaleup_domain, or "
                "scaleout_gbps, in its entry would spread the model further")
    return (f"{gpu.key} links to no other device: scaleup_gbps and scaleup_domain, or scaleout_gbps, in its entry "
            "would spread the model")


def check_capacity(served, workload, cap, overflow: str, workers: int = 1) -> None:
    """Refuse (one line) a workload the deployment cannot hold: not one request in the KV cache, or more
    closed-loop users than its `workers` engines run at once (cap.running: all of them together) without --overflow
    queue."""
    option = "--concurrency" if workload.concurrency is not None else "--request-rate"
    kv_helps = DTYPE_BYTES[served.scenario.kv_dtype] > 1  # an fp8 cache would hold more
    if cap.running < 1:
        left = (f"{cap.kv_budget_bytes / 1e9:.3g} GB per device left by {served.framework.key}'s memory rule after "
                "the weights" if cap.kv_budget_bytes > 0 else
                f"the weights alone exceed what {served.framework.key}'s memory rule leaves them, by "
                f"{-cap.kv_budget_bytes / 1e9:.3g} GB per device")
        check_reserve(served.gpu, served.framework, served.plan, "--tp/--pp")
        remedies = _remedies(served, kv_helps and cap.kv_budget_bytes > 0)  # no room left: no cache dtype helps
        option, settings = memory_settings(served, option)
        raise RooflineInputError(
            f"{option}: not one request of {workload.isl} + {workload.osl} tokens fits the KV cache of "
            f"{deployment_label(served.gpu, served.plan)} ({left}); {remedies}{settings}")
    if overflow == "refuse" and workload.concurrency is not None and workload.concurrency > cap.running:
        raise RooflineInputError(f"--concurrency: {workload.concurrency} requests of {workload.isl} + {workload.osl} "
                                 f"tokens {_held(served, cap, kv_helps, workers)}, or --overflow queue to let the "
                                 "rest wait for a slot")


def check_reserve(gpu, fw: Framework, plan: Parallel, option: str) -> None:
    """Refuse (one line) an engine of `plan` whose framework reserves all of each device (SGLang's reserve grows
    with the engine's GPUs and with its chunked-prefill size: a negative mem_fraction_static, which SGLang would not
    start with). A chunk the user set (--max-batched-tokens) that alone does it is named with the largest that
    does not."""
    if fw.memory_fraction > 0:
        return
    chunk, spec_method = fw.engine_rule or (None, None)
    if chunk and framework_for(fw.key, gpu, plan.tp, gpus=plan.devices,
                               spec_method=spec_method).memory_fraction > 0:
        limit = sglang_chunk_limit(gpu, plan, spec_method)
        raise RooflineInputError(
            f"--max-batched-tokens: {chunk} tokens of chunked prefill leave {fw.key} no memory on "
            f"{deployment_label(gpu, plan)} (it reserves 1.5 MiB of each device per token for activations: "
            f"mem_fraction_static {fw.memory_fraction:.3g}); expected at most {limit} there, or leave it out")
    fewer = "fewer devices per engine, " if plan.devices > 1 else ""
    raise RooflineInputError(
        f"{option}: {fw.key}'s memory rule reserves all of each device's memory for an engine of "
        f"{plan.devices} x {gpu.name} (mem_fraction_static {fw.memory_fraction:.3g}: 128 MiB per GPU of "
        f"the engine beside its activations and graphs); use {fewer}wider devices, or --memory-utilization")


def memory_settings(served, option: str) -> tuple[str, str]:
    """(the option to name, what else would make room) where the user's own settings shrank the cache: a memory
    share below the framework's default (--memory-utilization, then the option named), SGLang's chunked-prefill size
    set above its default (its reserve grows with it)."""
    fw, plan = served.framework, served.plan
    spec_method = (fw.engine_rule or (None, None))[1]
    default = framework_for(fw.key, served.gpu, plan.tp, gpus=plan.devices, spec_method=spec_method)
    settings = ""
    if fw.max_batched_tokens > default.max_batched_tokens:  # a larger step's activations (SGLang: its reserve)
        settings += f", or a smaller --max-batched-tokens ({fw.max_batched_tokens} given)"
        default = framework_for(fw.key, served.gpu, plan.tp, fw.max_batched_tokens, gpus=plan.devices,
                                spec_method=spec_method)
    if fw.memory_fraction < default.memory_fraction:
        return "--memory-utilization", settings + (f", or a larger --memory-utilization ({fw.memory_fraction:g} given; "
                                                   f"{fw.key}'s default {default.memory_fraction:g})")
    return option, settings


def _held(served, cap, kv_helps: bool, workers: int) -> str:
    """Why no more than cap.running requests run at once on `workers` engines: the KV cache (what would hold more:
    more devices where they link, an fp8 cache where `kv_helps`), or the framework's cap on running sequences (its
    default, or the token budget a step decodes them in)."""
    fw, replicas = served.framework, served.plan.tp if served.plan.attention_dp else 1
    where = deployment_label(served.gpu, served.plan)
    where = f"{workers} decode workers of {where}" if workers > 1 else where
    if cap.running < fw.running_cap(replicas) * workers:
        return (f"do not fit the KV cache of {where}: it holds {int(cap.running)} under {fw.key}'s memory rule; use "
                f"--concurrency <= {int(cap.running)}"
                f"{', more devices' if _spreads(served) else ''}{' or an fp8 KV cache' if kv_helps else ''}")
    engines = workers if fw.running_per_engine else replicas * workers
    each = f" per engine x {engines}" if engines > 1 else ""
    if fw.running_by_budget:
        return (f"cannot all run at once on {where}: a step of --max-batched-tokens {fw.max_batched_tokens} decodes "
                f"one token of each running sequence, so {fw.key} runs at most {int(cap.running)} "
                f"(--max-batched-tokens {fw.max_batched_tokens}{each}); use --concurrency <= {int(cap.running)}, a "
                "larger --max-batched-tokens")
    setting = f"--max-running {fw.running_given}" if fw.running_given else f"{RUNNING_CAP[fw.key]} {fw.max_running}"
    if fw.running_per_engine and replicas > 1:  # split over the DP-attention ranks
        each = f", {fw.max_running // replicas} on each of {replicas} attention-DP ranks{each}"
    return (f"cannot all run at once on {where}: {fw.key} runs at most {int(cap.running)} "
            f"({setting}{each}); use --concurrency <= {int(cap.running)}")


def check_kv_served(kv_dtype: str, where: str = "--kv-dtype") -> None:
    """Refuse a KV cache narrower than 8 bits, as the deployment search does (candidates.MIN_KV_BYTES): vLLM, SGLang
    and TensorRT-LLM cache keys and values in 16 bits or fp8; `roofline totals` prices such a cache as a what-if."""
    if DTYPE_BYTES.get(kv_dtype, 2.0) < MIN_KV_BYTES:
        raise RooflineInputError(f"{where}: {kv_dtype} is not served: no serving framework caches keys and values in "
                                 f"fewer than 8 bits (vLLM, SGLang and TensorRT-LLM: 16-bit or fp8); use fp8, fp16 "
                                 f"or bf16 (`roofline totals` prices a narrower cache as a what-if)")
