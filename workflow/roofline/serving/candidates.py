"""The deployment search's candidates: every (device, parallel plan, weight dtype, KV dtype, attention kernel) the
device can compute at and the engine accepts, each a Group of candidates that differ only in batch."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..engine.analysis import check_device_dtypes, check_indexer_device, deployment_label
from ..engine.dtypes import DTYPE_BYTES, check_storage_dtype
from ..engine.errors import RooflineInputError
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.parallel import Parallel, check_plan
from ..engine.scenario import ATTENTION_IMPLS, Scenario

#: weight (and KV cache) dtypes searched by default
DEFAULT_DTYPES = ("fp16", "fp8", "int8", "int4")
#: KV-cache dtypes the serving model searches when none are named: the ones vLLM (`kv_cache_dtype`), SGLang and
#: TensorRT-LLM's PyTorch backend all offer (16-bit and fp8; none of them has an int8 or int4 KV cache)
DEFAULT_KV_DTYPES = ("fp16", "fp8")
#: KV caches narrower than 8 bits are left out of the search (rare in serving engines: accuracy)
MIN_KV_BYTES = 1.0


def served_kv_dtypes(dtypes=None) -> tuple[str, ...]:
    """The KV-cache dtypes a served search takes from a `dtypes` list that sets weights and KV cache together: its
    floats of 8 bits or more (what serving frameworks offer), else its other dtypes of 8 bits or more (an int8 KV
    cache asked for), else DEFAULT_KV_DTYPES (a list of 4-bit weights alone, or none)."""
    wide = tuple(d for d in dtypes or () if DTYPE_BYTES[d] >= MIN_KV_BYTES)
    return tuple(d for d in wide if d in ("fp32", "fp16", "bf16", "fp8")) or wide or DEFAULT_KV_DTYPES


def activation_dtype(weight_dtype: str, gpu: Accelerator | None = None) -> str:
    """The activation dtype of the serving recipe for a weight dtype on `gpu` (None: an NVIDIA device that computes
    fp4). Floats of 8 bits or more keep their own type (FP8 is served W8A8, computing at the fp8 peak). On a device
    with an fp4 peak the 4-bit floats compute in 4 or 8 bits: on NVIDIA's (Blackwell) NVFP4 checkpoints run W4A4
    (TensorRT-LLM's and vLLM's ModelOpt NVFP4 recipe) and MXFP4 ones W4A8 (fp8 activations: TensorRT-LLM's MoE
    backend on Blackwell); on AMD's (MI350X/MI355X) MXFP4 runs W4A4 (AMD Quark's MXFP4 recipe), NVFP4, a format its
    matrix cores do not take, weight-only. Elsewhere they are weight-only, as integer weights always are (W4A16,
    W8A16), and so are FP8 weights on a device without an fp8 peak (vLLM's and SGLang's FP8 Marlin kernels on
    Ampere: an FP8 checkpoint on an A100 serves W8A16; elsewhere, a V100, a TPU, an assumption as for int8 weights).
    Weight-only recipes compute at the device's 16-bit float (Accelerator.sixteen_bit: bf16 on TPUs and Gaudi)."""
    sixteen = gpu.sixteen_bit if gpu is not None else "fp16"  # weight-only recipes compute at the device's 16 bits
    if weight_dtype == "fp8" and gpu is not None and "fp8" not in gpu.peak_flops_per_s:
        return sixteen
    if weight_dtype in ("fp32", "fp16", "bf16", "fp8"):
        return weight_dtype
    fp4 = gpu is None or "fp4" in gpu.peak_flops_per_s
    nvidia = gpu is None or gpu.vendor.upper() == "NVIDIA"
    if weight_dtype == "nvfp4" and fp4 and nvidia:
        return "nvfp4"
    if weight_dtype == "mxfp4" and fp4:
        return "fp8" if nvidia else "mxfp4"
    return sixteen


def on_device(scenario: Scenario, gpu: Accelerator) -> Scenario:
    """`scenario` with the activation dtype of its weights' serving recipe on `gpu` (activation_dtype), and its
    16-bit floats the device's own (Accelerator.sixteen_bit): a search's fp16 is bf16 on a device that publishes
    no fp16 peak (TPUs, Gaudi: same width, same bytes), where it would otherwise find no 16-bit candidate at all."""
    sixteen = {"fp16": gpu.sixteen_bit}
    fields = {"weight_dtype": sixteen.get(scenario.weight_dtype, scenario.weight_dtype),
              "kv_dtype": sixteen.get(scenario.kv_dtype, scenario.kv_dtype)}
    fields["act_dtype"] = activation_dtype(fields["weight_dtype"], gpu)  # weight-only: at the device's 16 bits
    if scenario.attention_weight_dtype:
        fields["attention_weight_dtype"] = sixteen.get(scenario.attention_weight_dtype,
                                                       scenario.attention_weight_dtype)
    changed = {k: v for k, v in fields.items() if getattr(scenario, k) != v}
    return replace(scenario, **changed) if changed else scenario


@dataclass(frozen=True)
class Group:
    """Candidates that differ only in batch: one device and one scenario (dtypes, kernel, parallel plan)."""

    gpu: Accelerator
    scenario: Scenario

    @property
    def plan(self) -> Parallel:
        return self.scenario.parallel

    @property
    def devices(self) -> int:
        return self.plan.devices

    def deployment(self) -> str:
        return deployment_label(self.gpu, self.plan)


#: tensor-parallel degrees, pipeline depths and expert-parallel degrees searched: powers of two, as deployed
POWERS_OF_TWO = tuple(2**i for i in range(13))


def parallel_plans(model: ModelSpec, gpu: Accelerator, max_devices: int) -> list[Parallel]:
    """Every plan of at most `max_devices` devices (tp x pp) that the engine accepts for this model and device
    (roofline.engine.parallel.check_plan: heads, layers, experts, scale-up domain and network): tp and pp powers of two;
    for MoE models also ep (a power of two dividing tp) and data-parallel attention (ep = tp). None on a device that
    cannot run the model at all (a sparse-attention indexer without fp8: analysis.check_indexer_device)."""
    try:
        check_indexer_device(model, gpu)
    except RooflineInputError:
        return []
    plans = []
    for tp in (n for n in POWERS_OF_TWO if n <= max_devices):
        for pp in (n for n in POWERS_OF_TWO if tp * n <= max_devices):
            eps = [n for n in POWERS_OF_TWO if n <= tp and tp % n == 0] if model.is_moe else [1]
            for ep in eps:
                for attention_dp in ((False, True) if model.is_moe and ep == tp > 1 else (False,)):
                    plan = Parallel(tp=tp, pp=pp, ep=ep, attention_dp=attention_dp)
                    try:
                        check_plan(model, gpu, plan.validate())
                    except RooflineInputError:
                        continue  # the model or the device cannot run it: not a candidate
                    plans.append(plan)
    return plans


def candidate_groups(model: ModelSpec, gpus: Sequence[Accelerator], dtypes: Sequence[str], max_devices: int,
                     memory_utilization: float = Scenario.memory_utilization, framework: str = "") -> list[Group]:
    """Every (device, plan, weight dtype, KV dtype, attention) the device can compute at and the engine accepts."""
    recipes = [Scenario(weight_dtype=w, act_dtype=activation_dtype(w), kv_dtype=kv, attention=attention,
                        memory_utilization=memory_utilization, framework=framework)
               for w in dtypes for kv in dtypes if DTYPE_BYTES[kv] >= MIN_KV_BYTES for attention in ATTENTION_IMPLS]
    groups = []
    for gpu in gpus:
        groups += [Group(gpu, replace(sc, parallel=plan)) for plan in parallel_plans(model, gpu, max_devices)
                   for sc in recipes_on(gpu, recipes)]
    return groups


def recipes_on(gpu: Accelerator, scenarios: Sequence[Scenario]) -> list[Scenario]:
    """The recipes `gpu` computes at, each with its activations as served there (on_device; a recipe that becomes
    another, e.g. W4A4 and W4A16 both weight-only on Hopper, is kept once; so is a weight-only FP8 recipe, on a device
    without an fp8 peak, where the same recipe with int8 weights is searched too: the same bytes and the same 16-bit
    compute, one row, int8's)."""
    served = dict.fromkeys(on_device(sc, gpu) for sc in scenarios)
    return [sc for sc in served if _computes(gpu, sc) and not (
        sc.weight_dtype == "fp8" and sc.act_dtype != "fp8" and replace(sc, weight_dtype="int8") in served)]


def _computes(gpu: Accelerator, scenario: Scenario) -> bool:
    try:
        check_device_dtypes(gpu, scenario)
    except RooflineInputError:
        return False  # the device publishes no peak for this recipe: not a candidate
    return True


#: worker counts searched per pool (disaggregated)
WORKER_COUNTS = (1, 2, 3, 4, 6, 8)


def linked_devices(gpu: Accelerator, max_devices: int) -> int:
    """Devices both pools of a disaggregated deployment may take together on `gpu`: at most its reach (the prefill
    pool hands each cache over to the decode pool; a device linked to no other has no disaggregated deployment)."""
    return int(min(max_devices, gpu.reach))


def pool_layouts(plans: list[Parallel], gpu: Accelerator, max_devices: int):
    """(prefill plan, decode plan, prefill workers, decode workers) of every layout of `plans` on `gpu` within
    `max_devices` and the device's links (linked_devices)."""
    limit = linked_devices(gpu, max_devices)
    for prefill in plans:
        for decode in plans:
            for x in WORKER_COUNTS:
                for y in WORKER_COUNTS:
                    if x * prefill.devices + y * decode.devices <= limit:
                        yield prefill, decode, x, y


def layout_count(plans: list[Parallel], gpu: Accelerator, max_devices: int) -> int:
    """How many layouts pool_layouts yields: pairs of pool loads (workers x devices of a plan), one per pool,
    that add up to at most its limit (sorted loads and one binary search each, not a loop over the pairs)."""
    limit = linked_devices(gpu, max_devices)
    loads = np.sort(np.outer(WORKER_COUNTS, [plan.devices for plan in plans]).ravel())
    return int(np.searchsorted(loads, limit - loads, side="right").sum())


def recipes(weight_dtypes: Sequence[str], kv_dtypes: Sequence[str], attention_weight_dtype: str = "",
            fp8_scaling: str = "tensor") -> list[Scenario]:
    """Scenarios of every (weight dtype, KV dtype, attention kernel): activations as the serving recipe; the attention
    projections at `attention_weight_dtype` where it differs from the weights' ("" = as the weights); fp8 weights
    scaled as `fp8_scaling` says."""
    if attention_weight_dtype:
        check_storage_dtype("--attention-weight-dtype", attention_weight_dtype)
    weights = tuple(dict.fromkeys(check_storage_dtype("--weight-dtypes", d) for d in weight_dtypes))
    kvs = tuple(dict.fromkeys(check_storage_dtype("--kv-dtypes", d) for d in kv_dtypes))
    narrow = [kv for kv in kvs if DTYPE_BYTES[kv] < MIN_KV_BYTES]  # named in the list: refused, not dropped unsaid
    if narrow:
        raise RooflineInputError(f"--kv-dtypes: {narrow[0]} is not served: no serving framework caches keys and values "
                                 "in fewer than 8 bits (vLLM, SGLang and TensorRT-LLM: 16-bit or fp8); drop it, or use "
                                 "fp8, fp16 or bf16")
    if not weights or not kvs:
        raise RooflineInputError("--kv-dtypes: no dtype of 8 bits or more for the KV cache; add one (e.g. fp8)")
    return [Scenario(weight_dtype=w, act_dtype=activation_dtype(w), kv_dtype=kv, attention=attention,
                     attention_weight_dtype="" if attention_weight_dtype == w else attention_weight_dtype,
                     fp8_scaling=fp8_scaling).validate()
            for w in weights for kv in kvs for attention in ATTENTION_IMPLS]
