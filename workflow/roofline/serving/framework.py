"""Serving frameworks: the scheduler defaults a served run inherits, and the per-step host time measured on them.

Documented defaults (the version each was read from is named; a flag overrides each):

* vLLM (V1 engine, `vllm serve`, 0.8-0.19): chunked prefill always on, prompt chunks share a step with the decode
  tokens under `max_num_batched_tokens` = 8192 and `max_num_seqs` = 1024 on devices of >= 70 GiB other than A100
  (2048 and 256 elsewhere; EngineArgs.get_batch_defaults), per data-parallel engine under DP attention;
  `gpu_memory_utilization` 0.9 of the device for weights, activations and KV cache together; requests are admitted
  while cache blocks are free (preempted when they run out).
* SGLang (0.5.4-0.5.10, `sglang.launch_server`; server_args._handle_gpu_memory_settings): by the device's memory,
  `chunked_prefill_size` 2048 under 35 GiB, 4096 under 60, 8192 under 160, 16384 above (DP attention splits it over
  the replicas) and `cuda_graph_max_bs` (SGLANG_BY_MEMORY); prefill batches and decode batches alternate
  (`enable_mixed_chunk` off: a prefill step pauses decoding); `mem_fraction_static` (weights + KV pool) = 1 -
  reserved / memory, the reserve for activations and CUDA graphs 512 MiB + 1.5 MiB per chunk token + 2 MiB per graph
  batch + 128 MiB per GPU of the engine, at least 10 GiB on devices over 60 GiB, + 2 GiB beside EAGLE or MTP heads
  and 6 GiB beside a draft model (0.836 on an 80 GiB H100 at TP 1, 0.897 on a 141 GiB H200 at TP 8, 0.853 on a 180
  GiB B200 at TP 8; the chunk a user sets counts instead of the default; each engine of a disaggregated deployment
  its own; before 0.5.4 it was 0.88 to 0.81 by TP alone).
  Left out: the reserve SGLang adds under DP attention, 4.5 MiB per graph batch and attention replica, which at the
  default cuda_graph_max_bs of 512 keeps 72 GiB of each device of a DEP 32 engine: the recorded DeepSeek-V3
  deployments on GB200 (benchmarks/validate_serving.py) could not have held their weights under it, so they ran
  with smaller graph batches or a fraction of their own. Requests are admitted against a reserve of their outputs
  scaled by `new_token_ratio`, which decays to its floor while nothing is retracted, and retracted when the pool runs
  out: in steady state the pool holds requests at about their mean in-flight length, as vLLM's.
* TensorRT-LLM (1.0-1.2, `trtllm-serve`): in-flight batching of context and generation requests in one step under
  `max_num_tokens` = 8192, `max_batch_size` 2048 (each per attention replica under DP attention); the KV cache
  takes `free_gpu_memory_fraction` 0.9 of the memory left after weights and activations; the GUARANTEED_NO_EVICT
  scheduler admits a request only when the cache can hold it at its full length. Under attention DP each rank
  schedules its own context requests, so a step waits for the rank that computes a prompt; `attention_dp_config`
  `enable_balance` (off by default; `timeout_iters` 50, `batching_wait_iters` 10 when on; NVIDIA's DeepSeek recipe
  sets 60 and 0) instead holds context requests until every rank has one, or until `timeout_iters` steps have
  passed, then waits `batching_wait_iters` steps more: the prompts are dealt evenly at the cost of that wait in
  TTFT (`dp_balance`; roofline.serving.holds). vLLM's data-parallel engines and SGLang do not balance. Without
  attention DP, `batch_wait_timeout_iters` and `batch_wait_max_tokens_ratio` (0 = off by default) hold context
  requests while requests decode, until a step's tokens reach that share of `max_num_tokens` or that many steps
  have passed (`batch_wait`; roofline.serving.holds.batch_wait).

Per-step host time (scheduling, sampling, detokenizing, launching the step's graph), its part that grows with the
running sequences (per sequence of each attention replica's scheduler) and the per-request time outside the steps
(HTTP, tokenization, the first token's return) are not in any kernel table: they are fitted per framework
on the measured served runs (benchmarks/validate_serving.py, fit half, reported on the rest) and stated here.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import FRAMEWORKS, GIB, Accelerator

#: frameworks that can hold context requests until every attention-DP rank has one, and their defaults when it is
#: turned on without values: (timeout_iters, batching_wait_iters) of TensorRT-LLM's AttentionDpConfig (llm_args.py)
BALANCING = {"trtllm": (50, 10)}
#: frameworks that can hold context requests to batch them without attention DP (TensorRT-LLM's
#: batch_wait_timeout_iters and batch_wait_max_tokens_ratio, both 0 = off by default in llm_args.py)
BATCH_WAITING = ("trtllm",)
#: the most steps batch waiting may hold a prompt (the config schema's limit too)
MAX_WAIT_STEPS = 1_000_000
#: why batch waiting is refused for a disaggregated deployment (CLI and serving section)
WAIT_NEEDS_DECODING = ("holds prompts while requests decode on the same engine, and a disaggregated deployment's "
                       "prefill workers decode none; drop it")
#: SGLang's defaults by the device's memory (server_args._handle_gpu_memory_settings, 0.5.4-0.5.10): (memory below
#: [GiB], chunked_prefill_size, cuda_graph_max_bs at tp < 4, at tp >= 4)
SGLANG_BY_MEMORY = ((20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160), (160, 8192, 256, 512),
                    (float("inf"), 16384, 512, 512))
#: what SGLang reserves beside its drafting (server_args: EAGLE and MTP heads and their graphs 2 GiB, a STANDALONE
#: draft model 6 GiB, NGRAM nothing), by our --spec-method
SGLANG_DRAFT_RESERVE_MIB = {"eagle": 2048, "mtp": 2048, "draft": 6144}
#: each framework's setting that caps the sequences one engine runs at once (Framework.max_running)
RUNNING_CAP = {"vllm": "max_num_seqs", "sglang": "max_running_requests", "trtllm": "max_batch_size"}
#: the framework a served run assumes when none is named; its kernel tables are that framework's too
#: (roofline.serving.steps)
DEFAULT_FRAMEWORK = "vllm"


@dataclass(frozen=True)
class Framework:
    """What a served run inherits from its framework (defaults resolved for one device and plan)."""

    key: str
    max_batched_tokens: int  # tokens one step may compute (decode + prompt chunks), per replica: step_budget
    max_running: int  # sequences one engine runs at once (RUNNING_CAP), at most the budget where steps mix
    mixed: bool  # prompt chunks share a step with decode tokens (False: prefill steps pause decoding)
    memory_fraction: float  # of each device's memory the framework sizes its KV cache from (see kv_budget_bytes)
    of_free_memory: bool  # memory_fraction applies to the memory left after weights and activations (TensorRT-LLM)
    reserve_full_length: bool  # a request is admitted only when the cache holds it at isl + osl tokens
    step_overhead_s: float  # host time per step [s] (fitted)
    request_overhead_s: float  # time per request outside the steps [s] (fitted)
    sync: float  # how far closed-loop users stay in lockstep groups, 0..1 (fitted; groups.cluster_size)
    handoff_s: float = 0.0  # disaggregated: time per request to route it and hand its cache over (fitted)
    #: host time per step per running sequence of an attention replica [s] (fitted): scheduling, sampling and
    #: bookkeeping that grow with the batch, each replica's scheduler handling its own under data-parallel attention
    host_per_sequence_s: float = 0.0
    budget_per_rank: bool = False  # under DP attention each attention replica schedules its own token budget
    #: (timeout_iters, batching_wait_iters) where context requests wait until every attention-DP rank has one
    #: (TensorRT-LLM's attention_dp_config.enable_balance); None: each rank computes its own prompts at once
    dp_balance: tuple[int, int] | None = None
    #: (timeout_iters, max_tokens_ratio) where context requests wait, while requests decode, for a step's tokens to
    #: reach that share of the budget or for that many steps (TensorRT-LLM's batch waiting); None: off
    batch_wait: tuple[int, float] | None = None
    running_by_budget: bool = False  # max_running is the token budget's (below the framework's own cap)
    running_given: int = 0  # --max-running as the user gave it (0: none; max_running holds it, or the budget's)
    #: the memory fraction is SGLang's default, derived from the engine (its tp and GPUs): for_engine re-derives it
    #: for another engine of the deployment (a disaggregated prefill pool's); () where it is not
    engine_rule: tuple = ()

    def for_engine(self, gpu: Accelerator, plan) -> Framework:
        """This framework for another engine on `gpu` of `plan` (a Parallel): SGLang's default memory fraction
        follows that engine's tp and GPUs (a 1-GPU prefill worker beside a 32-GPU decode engine keeps its own)."""
        if not self.engine_rule:
            return self
        chunk, spec_method = self.engine_rule
        fraction = _sglang_defaults(gpu.memory_bytes / GIB, plan.tp, plan.devices, chunk, spec_method)[1]
        return replace(self, memory_fraction=fraction)

    @property
    def running_per_engine(self) -> bool:
        """Whether max_running is the whole engine's: an SGLang max_running_requests the user gave, which SGLang
        splits over its DP-attention ranks (max_running_requests // dp_size each); else it is each replica's."""
        return bool(self.running_given) and self.key == "sglang"

    def running_cap(self, replicas: int) -> int:
        """Sequences an engine of `replicas` attention replicas runs at once: max_running per replica (vLLM's
        max_num_seqs per data-parallel engine, TensorRT-LLM's max_batch_size per rank, the defaults' per-replica
        pools), or split over them where it is the engine's (running_per_engine)."""
        if self.running_per_engine:
            return self.max_running // replicas * replicas
        return self.max_running * replicas

    def step_budget(self, plan) -> int:
        """Tokens one step of an engine of `plan` may compute: the budget, per attention replica where the
        framework schedules each replica of DP attention on its own (TensorRT-LLM's max_num_tokens, vLLM's
        max_num_batched_tokens per data-parallel engine), the whole engine's otherwise (SGLang splits its chunked
        prefill size over the replicas)."""
        replicas = plan.tp if plan.attention_dp and self.budget_per_rank else 1
        return self.max_batched_tokens * replicas

    def request_chunk(self, plan) -> float:
        """Prompt tokens of one request a step of an engine of `plan` may take: the request lives on one attention
        replica, whose budget is max_batched_tokens (TensorRT-LLM, vLLM) or its share of it (SGLang's chunked
        prefill size divided over the replicas)."""
        if plan.attention_dp and not self.budget_per_rank:
            return self.max_batched_tokens / plan.tp
        return float(self.max_batched_tokens)

    def kv_budget_bytes(self, memory_bytes: float, weight_bytes: float, activation_bytes: float) -> float:
        """Bytes of one device the KV cache may take under this framework's memory rule."""
        if self.of_free_memory:
            return self.memory_fraction * (memory_bytes - weight_bytes - activation_bytes)
        return self.memory_fraction * memory_bytes - weight_bytes - activation_bytes


#: (host time per step [s], per request [s], lockstep share, disaggregated hand-over per request [s], host time per
#: step per running sequence of an attention replica [s]), fitted on the
#: served runs of benchmarks/validate_serving.py (every other row by coordinate descent; reported on the rest).
#: Refit on 2026-12-02 (evening) after the disaggregated prefill queue took its utilization from full-budget steps,
#: the MoE all-to-all one copy per rank, the budget per DP-attention replica and collectives across scale-up
#: domains went hierarchical: SGLang per request 0.15 -> 0.3 s, lockstep share 0 -> 0.25 (a quarter of a
#: prefill-first scheduler's whole-wave groups: roofline.serving.groups.whole_group), hand-over 0.1 -> 0 s;
#: vLLM and TensorRT-LLM unchanged. Held-out TTFT MAPE 47.3%, TPOT 22.1% (before: 51.5%, 21.5%).
#: SGLang refit on 2026-12-03 after its KV pool stopped reserving full lengths (capacity.py) and GLM-5 joined the
#: runs: per request 0.3 -> 0.15 s, hand-over 0 -> 0.1 s, lockstep share 0.25 kept; all rows' held-out TTFT 41.8% ->
#: 39.3% (SGLang's 979 rows 50.1% -> 39.6%; 39.2% and 39.5% with groups.cluster_steps), TPOT unchanged.
#: vLLM's hand-over refit on 2026-12-03 (its disaggregated Kimi-K2.5 runs had joined since its last fit): 0 -> 0.2 s
#: (TTFT + TPOT MAPE of its 7 disaggregated fit rows 59.4 -> 19.2; TTFT of all 14: 52% -> 14%, the 7 held out:
#: 20%). The fit's per request 0.02 -> 0.04 s (loss 47.95 -> 47.81, within noise) is not taken: it moves the dense
#: rows' TTFT 33.5% -> 33.8%.
#: Host time per running sequence added on 2026-12-04, fitted on the even rows with the rest held (loss = TTFT + TPOT
#: MAPE of each framework's even rows, over 0-48 us): vLLM 0 (47.22 at 0, rising with it), SGLang 24 us (59.02 ->
#: 58.01; flat from 16 to 32 us), TensorRT-LLM 7 us (57.90 -> 57.76; flat from 5 to 8 us). Held back from the fit,
#: TensorRT-LLM's published maximum-load throughputs (benchmarks/validate_max_load.py: batches of thousands) move
#: from a +17.4% / +15.7% signed median over-prediction to the figures the README gives.
#: Lockstep shares refit on 2026-12-05 (late) on the fixed-length runs alone, once the InferenceX runs were served at
#: their random lengths (--length-spread, which dissolves the groups of a mixed scheduler: groups.lockstep), each
#: framework's even rows, loss TTFT + TPOT MAPE: vLLM 0 -> 0.125 (45.55 -> 44.69; 0.25: 44.80). TensorRT-LLM's
#: served runs fit 0.375 (55.55 -> 52.99), but its published maximum-load throughputs (held back from the fit:
#: benchmarks/validate_max_load.py) then move from a 13.1% to a 16.9% median error (15.9% at 0.125), past the 15%
#: they are held to: kept at 0. SGLang keeps 0.25 for both kinds of run (its random-length runs at 0: 56.47 -> 58.48).
#: TensorRT-LLM refit on 2026-12-05 (night), once its NVFP4 expert blocks above 128 tokens were priced on the CUTLASS
#: kernel its engine runs by default (aic_rows.MIN_LATENCY_TOKENS; the maximum-load median 14.0% -> 10.1%) and a
#: mixed scheduler's lone prompts and lockstep groups were priced apart (groups.lockstep_mix; the mean cluster
#: had dealt every prompt over the attention-DP replicas): lockstep share 0 -> 0.375 (even rows' loss 54.75 -> 52.55;
#: 0.25: 52.85, 0.5: 52.55, 0.625: 52.93) and hand-over 0.1 -> 0 s (on its disaggregated rows 73.75 -> 69.69); per
#: step, per request and per sequence stay. vLLM's 0.125 stays the best (44.54; 0.25: 44.69). Held back, the
#: maximum-load medians stay within their 15% (10.6% v1.0, 8.9% 03e27c7).
#: TensorRT-LLM refit on 2026-12-06, once 284 InferenceX runs recorded as tp N x N with experts N x N were served at
#: the TP N / EP N they ran (benchmarks/served_recipes.recorded_plan; they had been priced on N x N GPUs): per
#: request 0.08 -> 0.04 s, lockstep share 0.375 -> 0.5, hand-over 0 -> 0.1 s (even rows' loss 51.77 -> 49.17). The
#: grid's best share, 0.75 (48.74; 0.625: 48.81), is not taken: the held-back maximum-load median goes 10.6% ->
#: 13.1% (MoE points' signed median +19% -> +26%) against 11.4% at 0.5. SGLang's refit moves nothing past noise (per
#: sequence 16 us: 52.48 -> 52.38): kept. Once the package's db-dump rows were served as the InferenceX runs they are
#: (benchmarks/served_recipes.INFERENCEX), the three refit again: TensorRT-LLM's best share 0.75 (49.81 -> 49.55) and
#: SGLang's 16 us (51.92 -> 51.82) are not taken, as above; vLLM's per request 0.02 -> 0.03 s (45.46 -> 44.29, between
#: the grid's 0.02 and 0.04: 44.91; its lockstep share 0 there 44.61).
FITTED = {"vllm": (0.0, 0.03, 0.125, 0.2, 0.0), "sglang": (0.0, 0.15, 0.25, 0.1, 24e-6),
          "trtllm": (0.0, 0.04, 0.5, 0.1, 7e-6)}


def framework_for(key: str, gpu: Accelerator, tp: int = 1, max_batched_tokens: int | None = None,
                  memory_fraction: float | None = None, fitted: tuple | None = None,
                  dp_balance: tuple[int, int] | None = None, gpus: int = 0,
                  spec_method: str | None = None, batch_wait: tuple[int, float] | None = None,
                  max_running: int | None = None) -> Framework:
    """The framework `key` ("" = DEFAULT_FRAMEWORK) with its documented defaults for `gpu` (and the engine's tp and
    devices `gpus`, tp x pp (0: tp), and the speculative method: SGLang's memory fraction); `fitted` replaces the fitted
    constants (benchmarks/validate_serving.py --fit); `dp_balance` (timeout_iters, batching_wait_iters) turns on
    TensorRT-LLM's attention-DP balancing; `batch_wait` (timeout_iters, max_tokens_ratio) its batch waiting;
    `max_running` replaces its cap on the sequences an engine runs at once (RUNNING_CAP, --max-running)."""
    key = key or DEFAULT_FRAMEWORK
    if key not in FRAMEWORKS:
        raise unknown("--framework", key, FRAMEWORKS)
    if dp_balance is not None and key not in BALANCING:
        raise RooflineInputError(f"--attention-dp-balance: {key} does not balance context requests over the "
                                 f"attention-DP ranks; only {', '.join(BALANCING)} does (attention_dp_config)")
    if batch_wait is not None:
        check_batch_waiting(key, "--batch-wait")
    memory = gpu.memory_bytes / GIB
    big = memory >= 70 and "A100" not in gpu.name
    chunk, fraction = _sglang_defaults(memory, tp, gpus, max_batched_tokens, spec_method)  # SGLang's, by the engine
    defaults = {
        "vllm": dict(max_batched_tokens=8192 if big else 2048, max_running=1024 if big else 256, mixed=True,
                     memory_fraction=0.9, of_free_memory=False, reserve_full_length=False, budget_per_rank=True),
        "sglang": dict(max_batched_tokens=chunk, max_running=4096, mixed=False, memory_fraction=fraction,
                       of_free_memory=False, reserve_full_length=False),
        "trtllm": dict(max_batched_tokens=8192, max_running=2048, mixed=True, memory_fraction=0.9,
                       of_free_memory=True, reserve_full_length=True, budget_per_rank=True),
    }[key]
    if max_running is not None:
        defaults.update(max_running=max_running, running_given=max_running)
    if max_batched_tokens is not None:
        defaults["max_batched_tokens"] = max_batched_tokens
        if defaults["mixed"] and max_batched_tokens < defaults["max_running"]:  # a step decodes one token of every
            # running sequence inside its token budget, so no more run at once than the budget holds (vLLM refuses
            # max_num_batched_tokens < max_num_seqs)
            defaults.update(max_running=max_batched_tokens, running_by_budget=True)
    if memory_fraction is not None:
        defaults["memory_fraction"] = memory_fraction
    elif key == "sglang":
        defaults["engine_rule"] = (max_batched_tokens, spec_method)
    step, request, sync, handoff, per_sequence = fitted or FITTED[key]
    return Framework(key=key, step_overhead_s=step, request_overhead_s=request, sync=sync, handoff_s=handoff,
                     host_per_sequence_s=per_sequence,
                     dp_balance=None if dp_balance is None else tuple(dp_balance),
                     batch_wait=None if batch_wait is None else tuple(batch_wait), **defaults)


#: frameworks that run on one vendor's devices only (TensorRT-LLM: NVIDIA's CUDA GPUs)
VENDOR_ONLY = {"trtllm": "NVIDIA"}


def check_runs_on(key: str, gpu: Accelerator, where: str = "--framework") -> None:
    """Refuse serving framework `key` on a device it does not run on (TensorRT-LLM off NVIDIA GPUs), in one line; a
    user-defined device that names no vendor is taken at its word."""
    if not runs_on(key, gpu):
        vendor = VENDOR_ONLY[key]
        raise RooflineInputError(f"{where}: {key} runs on {vendor} GPUs only, and {gpu.key} is {gpu.vendor}'s; "
                                 f"choose vllm or sglang for it")


def runs_on(key: str, gpu: Accelerator) -> bool:
    """Whether serving framework `key` ("" = any) runs on `gpu` (VENDOR_ONLY; a device naming no vendor: yes)."""
    vendor = VENDOR_ONLY.get(key or "")
    return not vendor or not gpu.vendor or gpu.vendor.casefold() == vendor.casefold()


def balance_label(dp_balance: tuple[int, int] | None) -> str:
    """The attention_dp_balance column: "TIMEOUT,WAIT" steps, or "off"."""
    return "off" if dp_balance is None else f"{dp_balance[0]},{dp_balance[1]}"


def check_batch_waiting(key: str, where: str) -> None:
    """Refuse batch waiting (named `where`) under a framework that does not wait for batches (one line)."""
    if key not in BATCH_WAITING:
        raise RooflineInputError(f"{where}: {key} does not hold prompts back for a fuller step; only "
                                 f"{', '.join(BATCH_WAITING)} does (batch_wait_timeout_iters)")


def batch_wait_setting(steps, ratio, where: str) -> tuple[int, float] | None:
    """(steps, ratio) of batch waiting, checked: a whole number of steps from 0 to MAX_WAIT_STEPS (20.0 is 20) and a
    share of the step budget from 0 to 1; None (off) where either is 0, which TensorRT-LLM holds nothing at (the
    counter has reached 0 steps, a share of 0 tokens is met at once). `where` names the setting in the message."""
    whole = (not isinstance(steps, bool) and isinstance(steps, (int, float)) and float(steps).is_integer()
             and 0 <= steps <= MAX_WAIT_STEPS)
    share = not isinstance(ratio, bool) and isinstance(ratio, (int, float)) and 0 <= ratio <= 1
    if not (whole and share):
        raise RooflineInputError(f"{where}: {steps!r}, {ratio!r} is not allowed; expected a whole number of steps "
                                 f"from 0 to {MAX_WAIT_STEPS:,} (batch_wait_timeout_iters) and a share of "
                                 "max_num_tokens from 0 to 1 (batch_wait_max_tokens_ratio), e.g. 20, 0.9")
    return None if steps == 0 or ratio == 0 else (int(steps), float(ratio))


def held_batch_wait(batch_wait: tuple[int, float] | None, mode: str, plan) -> tuple[int, float] | None:
    """`batch_wait` where an engine of `plan` in `mode` holds prompts with it: aggregated, without attention DP
    (TensorRT-LLM turns it off there); None elsewhere (a disaggregated prefill worker decodes nothing to wait
    beside)."""
    return batch_wait if mode == "aggregated" and not plan.attention_dp else None


def batch_wait_label(batch_wait: tuple[int, float] | None) -> str:
    """The batch_wait column: "STEPS,RATIO" (the ratio to 6 significant figures: 0.9, not 0.90), or "off"."""
    return "off" if batch_wait is None else f"{batch_wait[0]},{batch_wait[1]:g}"


def _sglang_defaults(memory_gib: float, tp: int, gpus: int = 0, chunk: int | None = None,
                     spec_method: str | None = None) -> tuple[int, float]:
    """(chunked_prefill_size, mem_fraction_static) SGLang picks on a device of `memory_gib` GiB for an engine of tp
    ranks over `gpus` devices (tp x pp; 0: tp), its chunk `chunk` where the user set it, drafting by `spec_method`
    (module docstring). The fraction is negative where the reserve exceeds the device (SGLang would not start)."""
    default, graphs_small_tp, graphs_large_tp = next(row[1:] for row in SGLANG_BY_MEMORY if memory_gib < row[0])
    chunk = chunk or default
    graphs = graphs_small_tp if tp < 4 else graphs_large_tp
    reserved_mib = 512 + 1.5 * max(chunk, 2048) + 2 * graphs + (gpus or tp) / 8 * 1024
    memory_mib = memory_gib * 1024
    if memory_gib > 60:
        reserved_mib = max(reserved_mib, 10 * 1024)
    reserved_mib += SGLANG_DRAFT_RESERVE_MIB.get(spec_method or "", 0)
    return chunk, round((memory_mib - reserved_mib) / memory_mib, 3)


def sglang_chunk_limit(gpu: Accelerator, plan, spec_method: str | None = None, most: int = 1 << 20) -> int:
    """The largest chunked-prefill size (--max-batched-tokens) under which SGLang's memory rule leaves an engine of
    `plan` on `gpu` a positive mem_fraction_static (0: none does; its reserve grows 1.5 MiB per token)."""
    def fits(chunk: int) -> bool:
        return _sglang_defaults(gpu.memory_bytes / GIB, plan.tp, plan.devices, chunk, spec_method)[1] > 0
    if not fits(1):
        return 0
    low, high = 1, most
    if fits(high):
        return high
    while high - low > 1:  # fits(low), not fits(high)
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
