"""Expected times of whole steps and of single operators, in bulk: the kernels of a step are stacked into arrays
once (device-independent, `Kernels`), then every device's expected times come from a handful of vectorized lookups
(one per curve), whatever the number of operators and candidates.

An operator alone (`standalone`, the per-operator `t_expected_s`): its kernel's expected time as a microbenchmark
times it, launch included (roofline.estimate.lookup).

A served step under a framework (`Kernels.step`, the totals' ttft/tpot_expected_s and the deployment search): the
kernels the framework runs, i.e. the engine's operators with the framework's fusions applied (FUSIONS: a fused
kernel is looked up at its members' summed FLOPs and bytes, as one kernel of its class), each plus the framework's
time between two kernels of a CUDA-graph step, plus its per-step overhead (scheduler, sampling): both fitted on
served runs (data/calibrations/frameworks.json, benchmarks/validate_served.py). Without a framework (a device with
no shipped table, or a table of one's own) the step is the sum of its operators alone, as timed.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from ..engine.collectives import collective_kind, link_arrays, link_seconds
from ..engine.dtypes import DTYPE_BYTES
from ..engine.graph import Op, attention_groups
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.parts import gemm_input_dtype, part_weight_dtype, scenario_dtypes
from ..engine.roofline import roof_times
from ..engine.scenario import Scenario
from .calibration import (
    CALIBRATED,
    CORE_CLASSES,
    DEFAULT,
    FP8_BLOCK_OPERAND,
    FP8_WEIGHT_ONLY_OPERAND,
    PARTIAL,
    coordinates,
    data_dir,
    third_axis,
)
from .curves import log10_intensity
from .lookup import Calibration

#: fusions every framework applies: (member operators, class of the fused kernel)
COMMON_FUSIONS = (
    (("q_proj", "k_proj", "v_proj"), "gemm"),  # one QKV GEMM
    (("gate_proj", "up_proj"), "gemm"),  # one gate-up GEMM
    (("shared_gate_proj", "shared_up_proj"), "gemm"),
    (("expert_gate_proj", "expert_up_proj", "expert_act", "expert_down_proj"), "moe"),  # one fused MoE kernel
    (("attn_add", "mlp_norm"), "elementwise"),  # fused residual add + RMSNorm
    (("mlp_add", "attn_norm"), "elementwise"),  # (the next layer's norm)
)
#: per framework, in order of preference (an operator joins the first group whose members are all present):
#: TensorRT-LLM also fuses the all-reduce with the residual add and the norm, and RoPE and the KV-cache write into
#: its attention kernel
FUSIONS = {
    "trtllm": ((("attn_all_reduce", "attn_add", "mlp_norm"), "communication"),
               (("mlp_all_reduce", "mlp_add", "attn_norm"), "communication"),
               (("rope", "kv_cache_write", "fused_attention"), "attention"), *COMMON_FUSIONS),
    "vllm": COMMON_FUSIONS,
    "sglang": COMMON_FUSIONS,
}
#: kernel lookups per batched call at most about this many values (seconds_many): large enough that the calls are
#: few, small enough that their temporaries stay in cache rather than in freshly mapped pages
BATCH_VALUES = 1 << 16


@lru_cache(maxsize=1)
def overheads() -> dict:
    """{framework: {"kernel_gap_s": ..., "step_s": ...}} fitted on served runs (frameworks.json)."""
    path = data_dir() / "frameworks.json"
    return json.loads(path.read_text())["frameworks"] if path.is_file() else {}


def operand_dtype(op: Op, scenario: Scenario, cls: str) -> str:
    """The operand dtype a lookup keys on: the weights' of a GEMM (experts: the experts'; lm_head: the table's;
    routers and attention projections: theirs; block-scaled fp8 weights: FP8_BLOCK_OPERAND; fp8 weights computed at
    16 bits: FP8_WEIGHT_ONLY_OPERAND), the KV cache's of an attention kernel; "" elsewhere."""
    if cls in ("gemm", "moe"):
        expert = op.name.startswith("expert_") or cls == "moe"
        if expert:
            weights = scenario.expert_dtype
        else:
            weights = scenario_dtypes(scenario).head_weight if op.name == "lm_head" else part_weight_dtype(op.name,
                                                                                                             scenario)
        if weights == "fp8" and op.compute_dtype != "fp8":
            return FP8_WEIGHT_ONLY_OPERAND
        if weights == "fp8" and scenario.fp8_scaling == "block" and not expert:
            return FP8_BLOCK_OPERAND
        return weights
    return scenario.kv_dtype if cls == "attention" else ""


#: a GEMM with fewer outputs per row than this is a matrix-vector product (a gate Linear(D, 1), Mixtral's 8-expert
#: router): GEMV-class kernels stream its input like an element-wise kernel, and the measured GEMM tables hold no
#: such shape (their narrowest outputs are 32 wide; read there they gave 20-100x the bound). Such a kernel is priced
#: on the element-wise curve and, like the element-wise kernels, left out of the step's estimate label
GEMV_OUTPUTS = 32


#: kernels no table measures that are looked up on a measured curve of their class (Gated DeltaNet's convolution and
#: delta rule, DeepSeek Sparse Attention's indexer scores on the softmax-attention curves; the package's DSA tables
#: time whole attention modules, not this kernel): their estimate is `default`, whatever the curve's
UNMEASURED = ("conv1d", "gated_delta_rule", "indexer_scores")


def gemm_outputs(op: Op, scenario: Scenario, pick) -> float:
    """Outputs per row N of a GEMM operator: FLOPs 2 M N K over input bytes M K x its width (the widest over
    candidates)."""
    width = DTYPE_BYTES[gemm_input_dtype(op.name, scenario)]
    with np.errstate(divide="ignore", invalid="ignore"):
        n = pick(op.cost.flops) * width / (2 * pick(op.cost.act_read))
    return float(np.nanmax(n)) if np.size(n) else 0.0


def fuse(ops, framework: str) -> list[tuple[tuple[Op, ...], str]]:
    """The operators as the framework's kernels, (operators, class): fused groups (FUSIONS) where all members are
    present with one count (the member of the group's class first), every other operator alone."""
    by_name = {op.name: op for op in ops}
    taken: set[str] = set()
    out = []
    for members, cls in FUSIONS.get(framework, ()):
        group = [by_name.get(name) for name in members]
        if any(op is None or op.name in taken for op in group) or len({op.count for op in group}) > 1:
            continue
        taken.update(members)
        principal = next((op for op in group if op.op_class == cls), group[0])
        out.append(((principal, *(op for op in group if op is not principal)), cls))
    return out + [((op,), op.op_class) for op in ops if op.name not in taken]


def row_window(model: ModelSpec, op: Op) -> int | None:
    """The keys an attention row's query sees at most: its group's sliding window, a sparse model's top-k (not for
    the indexer, which scores every key), None for full causal attention (chunked rows: model.attention_chunk)."""
    suffix = "_swa" if op.name.endswith("_swa") else ""
    window = next((w for s, w, _ in attention_groups(model) if s == suffix), None)
    return model.index_topk if model.is_sparse_attention and op.name not in UNMEASURED else window


def keys_per_sequence(model: ModelSpec, op: Op, seq_len):
    """Keys one decode query attends (graph._keys_attended): S + 1, within a window, the current chunk or the
    sparse-attention indexer's top-k (the indexer itself scores all S + 1)."""
    seq = np.asarray(seq_len, dtype=float)
    if op.name.endswith("_chunked"):
        return seq % model.attention_chunk + 1
    window = row_window(model, op)
    return seq + 1 if window is None else np.minimum(seq + 1, window)


def _shared_reads(members, pick):
    """Bytes the members of a fused GEMM read twice: the input every member after the first shares with it."""
    first = pick(members[0].cost.act_read)
    return sum(first for op in members[1:] if np.array_equal(pick(op.cost.act_read), first))


def _as_array(value):
    return np.asarray(value, dtype=float)


def _matrix(values: list, n: int) -> np.ndarray:
    """Rows of scalars or length-n arrays as a k x n array."""
    out = np.empty((len(values), n))
    for i, value in enumerate(values):
        out[i] = value
    return out


class Kernels:
    """The kernels of one step, stacked (k kernels x n candidates), device-independent: their FLOPs, DRAM bytes,
    link bytes and message bytes, log10 intensity, keys per sequence, count, and each kernel's lookup key.

    `pick` maps every cost array of the operators to the n candidates wanted (default: as they are)."""

    def __init__(self, model: ModelSpec, scenario: Scenario, stage: str, ops, framework: str, pick=None, seq_len=None):
        groups = fuse(ops, framework)
        pick = pick or _as_array
        self.framework, self.count = framework, np.array([g[0][0].count for g in groups], dtype=float)
        self.principal = [g[0][0] for g in groups]
        self.unmeasured = [i for i, op in enumerate(self.principal) if op.name in UNMEASURED]
        self.classes = ["elementwise" if cls == "gemm" and len(members) == 1
                        and gemm_outputs(members[0], scenario, pick) < GEMV_OUTPUTS else cls
                        for members, cls in groups]
        costs = {op.name: (pick(op.cost.flops), pick(op.cost.bytes), pick(op.cost.network)) for op in ops}
        rows = [[sum(costs[op.name][field] for op in members) for members, _ in groups] for field in range(3)]
        for number, (members, cls) in enumerate(groups):
            if len(members) > 1 and cls in ("gemm", "moe"):  # a fused GEMM reads its shared input once
                rows[1][number] = rows[1][number] - _shared_reads(members, pick)
        n = max(np.size(value) for field in rows for value in field)
        self.flops, self.bytes, self.network = (_matrix(field, n) for field in rows)
        self.message = np.zeros_like(self.flops)
        for i, (op, cls) in enumerate(zip(self.principal, self.classes)):
            if cls == "communication":
                self.message[i] = pick(np.maximum(op.cost.act_read, op.cost.act_write))
        self.log_intensity = log10_intensity(self.flops, self.bytes)
        self.writes = [sum(pick(op.cost.act_write) for op in members) for members, _ in groups]
        self.lookups = self._lookups(model, scenario, stage, pick, scenario.seq_len if seq_len is None else seq_len)

    def _lookups(self, model, scenario, stage, pick, seq_len) -> dict:
        """{lookup key: (kernel rows, extra coordinates)}: (cls, dtype, operand, phase) for kernels, (kind, span)
        for collectives."""
        out: dict[tuple, list] = {}
        for i, (op, cls) in enumerate(zip(self.principal, self.classes)):
            if cls == "communication":
                out.setdefault(("communication", collective_kind(op.name), op.span), []).append(i)
                continue
            phase = "" if cls != "attention" else f"mla_{stage}" if model.is_mla else stage
            out.setdefault((cls, op.compute_dtype, operand_dtype(op, scenario, cls), phase), []).append(i)
        lookups = {}
        for key, rows in out.items():
            axis = "" if key[0] == "communication" else third_axis(key[0], key[3])
            extra = []
            if axis:
                third = [self._third(model, scenario, self.principal[i], i, axis, pick, seq_len) for i in rows]
                extra = [coordinates(key[0], key[3], 1.0, 1.0, 1.0, _matrix(third, self.flops.shape[1]))[0][2]]
            lookups[key] = (np.array(rows), extra)
        return lookups

    def _third(self, model, scenario, op: Op, row: int, axis: str, pick, seq_len):
        """The third coordinate of kernel `row`: keys per sequence (decode attention) or n / k of a GEMM (its
        outputs over its input, each at its width: lm_head reads the table's input dtype; an MoE kernel: its first
        expert GEMM's)."""
        if axis == "decode":
            return pick(keys_per_sequence(model, op, seq_len))
        writes = pick(op.cost.act_write) if self.classes[row] == "moe" else self.writes[row]
        width_in = DTYPE_BYTES[gemm_input_dtype(op.name, scenario)]
        width_out = DTYPE_BYTES[scenario_dtypes(scenario).act16]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.nan_to_num(writes / width_out / (pick(op.cost.act_read) / width_in), nan=1.0)

    def device_bounds(self, devices) -> tuple[np.ndarray, np.ndarray | None]:
        """(bound [k x m], the candidate column of each of the m): every kernel's roofline bound on one device (all
        candidates; columns None), or on several [(device, candidate columns)] side by side, all at once: the
        arithmetic of engine.analysis.devices_time, every kernel in one array operation (a search prices ~10^4
        (piece, device) jobs)."""
        single = isinstance(devices, Accelerator)
        if single:
            devices = [(devices, np.arange(self.flops.shape[1]))]
        columns = np.concatenate([cols for _, cols in devices])
        sizes = [len(cols) for _, cols in devices]
        gpus = [gpu for gpu, _ in devices]
        peaks = np.array([[gpu.peak(op.compute_dtype) for gpu in gpus] for op in self.principal], dtype=float)
        bandwidth = np.repeat(np.array([gpu.bandwidth_bytes_per_s for gpu in gpus], dtype=float), sizes)
        t = roof_times(self.flops[:, columns], self.bytes[:, columns], np.repeat(peaks, sizes, axis=1), bandwidth,
                       0.0, np.maximum)[2]
        for i, op in enumerate(self.principal):
            if op.span > 1:
                links = link_arrays(gpus, op.span)
                t[i] = np.maximum(t[i], link_seconds(collective_kind(op.name), self.network[i, columns], op.span,
                                                     tuple(np.repeat(column, sizes) for column in links.T)))
        return t, None if single else columns

    def seconds(self, calibration: Calibration, devices, standalone: bool = False):
        """(expected [k x m] s, estimate label per kernel) on one device, or on several that share `calibration`:
        [(device, candidate columns)], their candidates side by side."""
        return seconds_many(calibration, [(self, devices)], standalone)[0]

    def kernel_time(self, calibration: Calibration, devices) -> tuple[np.ndarray, set[str]]:
        """(the step's kernels as the framework runs them [m] s: count x (kernel + the time between two kernels),
        the per-step overhead left out; the labels of its core kernels), on `devices` (as `seconds`). Without a
        framework model: the kernels alone, each as timed alone."""
        return kernel_times(calibration, [(self, devices)])[0]

    def total(self, seconds: np.ndarray, labels: list[str]) -> tuple[np.ndarray, set[str]]:
        """kernel_time from the kernels' expected times `seconds` [k x m] and labels."""
        modelled = self.framework in FUSIONS
        gap = overheads().get(self.framework, {}).get("kernel_gap_s", 0.0) if modelled else 0.0
        total = (self.count[:, None] * (seconds + gap)).sum(axis=0)
        # element-wise kernels may be fallbacks, and so may GEMVs (GEMV_OUTPUTS: a GEMM operator priced as a stream)
        core = {label for label, cls, op in zip(labels, self.classes, self.principal)
                if cls in CORE_CLASSES or (op.op_class in CORE_CLASSES and cls != "elementwise")}
        return total, core

    def step(self, calibration: Calibration, devices) -> tuple[np.ndarray, str]:
        """(expected step time [m] s, estimate) under the calibration's framework on `devices` (as `seconds`):
        kernel_time plus the framework's per-step overhead; callers keep it at least the step's bound."""
        total, core = self.kernel_time(calibration, devices)
        step_s = overheads().get(self.framework, {}).get("step_s", 0.0) if self.framework in FUSIONS else 0.0
        return total + step_s, step_label(core)


def kernel_times(calibration: Calibration, jobs: list) -> list[tuple[np.ndarray, set[str]]]:
    """Kernels.kernel_time of many jobs [(kernels, devices)] that share `calibration`, their lookups batched
    (seconds_many)."""
    out: list = [None] * len(jobs)
    for modelled in (True, False):  # a framework model prices kernels in a step; without one, each alone
        chosen = [n for n, (kernels, _) in enumerate(jobs) if (kernels.framework in FUSIONS) == modelled]
        if chosen:
            priced = seconds_many(calibration, [jobs[n] for n in chosen], standalone=not modelled)
            for n, (seconds, labels) in zip(chosen, priced):
                out[n] = jobs[n][0].total(seconds, labels)
    return out


def seconds_many(calibration: Calibration, jobs: list, standalone: bool = False) -> list[tuple[np.ndarray, list]]:
    """Kernels.seconds of many jobs [(kernels, devices)] that share `calibration`: the kernels of every job that
    read one curve are looked up in one call (the lookups are element-wise), in batches of about BATCH_VALUES
    values, so a search's thousands of (scenario, device) tables cost a few dozen lookups, not one per kernel."""
    results, pending, size = [], {}, 0
    for kernels, devices in jobs:
        bound, columns = kernels.device_bounds(devices)
        out, labels = np.empty_like(bound), [DEFAULT] * len(kernels.principal)
        results.append((out, labels))
        for key, (rows, extra) in kernels.lookups.items():
            inputs = [kernels.message[rows]] if key[0] == "communication" else [kernels.log_intensity[rows], *extra]
            inputs = [value if columns is None else value[:, columns] for value in inputs]
            pending.setdefault(key, []).append((out, labels, rows, bound[rows], inputs))
        size += bound.size
        if size >= BATCH_VALUES:
            _resolve(calibration, pending, standalone)
            pending, size = {}, 0
    _resolve(calibration, pending, standalone)
    for (kernels, _), (_, labels) in zip(jobs, results):
        for i in kernels.unmeasured:
            labels[i] = DEFAULT
    return results


def _resolve(calibration: Calibration, pending: dict, standalone: bool) -> None:
    """Look up every pending kernel, one call per curve key, and write the times and labels into their jobs."""
    for key, items in pending.items():
        t = np.concatenate([bound.ravel() for _, _, _, bound, _ in items])
        inputs = [np.concatenate([np.broadcast_to(values[n], bound.shape).ravel() for _, _, _, bound, values in items])
                  for n in range(len(items[0][4]))]
        if key[0] == "communication":
            seconds, label = calibration.collectives(key[1], key[2], inputs[0], t)
        else:
            seconds, label = calibration.kernels(*key, t, inputs, standalone)
        start = 0
        for out, labels, rows, bound, _ in items:
            out[rows] = np.reshape(seconds[start:start + bound.size], bound.shape)
            start += bound.size
            for i in rows:
                labels[i] = label


def step_label(labels) -> str:
    """`calibrated` when every core kernel (GEMM, attention, MoE, communication) is, `partial` when some are,
    `default` otherwise."""
    if labels and all(label == CALIBRATED for label in labels):
        return CALIBRATED
    return PARTIAL if CALIBRATED in labels else DEFAULT


def combine(*labels: str) -> str:
    """The estimate of several steps together (a prefill and a decode step, the parts of a served step)."""
    if all(label == CALIBRATED for label in labels):
        return CALIBRATED
    return DEFAULT if all(label == DEFAULT for label in labels) else PARTIAL
