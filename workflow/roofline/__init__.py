"""llm-roofline: roofline analysis of LLM inference (see the README).

The Python API mirrors the `roofline` command: each function takes that command's options as keywords (the option
name with '_' for '-': ``seq_len=2048`` for ``--seq-len 2048``, ``attention_dp=True`` for the flag, a list for an
option given several times) and returns a pandas DataFrame whose columns and values are those of the command's
``--format csv``. Options left out take the command's defaults (``roofline ops --help``). Bad input raises
``RooflineInputError`` with the command line's one-line message.

    import roofline
    roofline.totals(model="llama-3.1-8b", gpu="h100-sxm", stage="decode", batch=8)[["tpot_s", "fits"]]

Importing `roofline` loads nothing heavy: pandas, numpy and the engine load on the first call.

Packages, lowest layer first: `engine` (specs, operator costs, the roofline), `estimate` (calibrated expected times),
`serving` (the serving model and the deployment search), `pipeline`, `figures` and `report` (the Snakemake workflow's
library), and `cli` (the command; the functions below share its option parsing and rows).
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (tens of ms at every `import roofline`)
if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas

    from .engine.errors import RooflineInputError

__all__ = ["RooflineInputError", "compare", "ops", "plan", "serve", "totals"]


def ops(model: str, gpu: str, stage: str, **options) -> pandas.DataFrame:
    """`roofline ops`: one row per operator of one step (values per instance, with `count`).

    `model` is a catalog key or the path of a config.json, `gpu` a catalog key or the path of a YAML/JSON file
    holding one device as config.yaml's gpus: writes it, `stage` prefill or decode. Options:
    batch, seq_len, weight_dtype, act_dtype, kv_dtype, expert_weight_dtype, attention_weight_dtype, fp8_scaling,
    weight_group_size, attention, logits, expert_routing, mla_mode, parallel, tp, pp, ep, attention_dp,
    memory_utilization, framework (vllm, sglang or trtllm: whose measured kernel tables the expected times use;
    default the device's), calibration, calibration_any_device.
    """
    return _frame("ops", model=model, gpu=gpu, stage=stage, **options)


def totals(model: str, gpu: str, stage: str, **options) -> pandas.DataFrame:
    """`roofline totals`: one row with the totals of one stage (time, TTFT/TPOT, footprint, fit, expected times,
    cost and energy per token).

    Arguments and options as for `ops`: batch, seq_len, weight_dtype, act_dtype, kv_dtype, expert_weight_dtype,
    attention_weight_dtype, fp8_scaling, weight_group_size, attention, logits, expert_routing, mla_mode, parallel,
    tp, pp, ep, attention_dp, memory_utilization, framework, calibration, calibration_any_device; and price_per_hour
    (USD per device-hour: the cost columns).
    """
    return _frame("totals", model=model, gpu=gpu, stage=stage, **options)


def plan(model: str, gpu: str | Sequence[str] | None = None, *, isl: int, osl: int, **options) -> pandas.DataFrame:
    """`roofline plan`: the deployment search's Pareto frontier (tokens/s per device vs per user), best first.

    `gpu` is one candidate device or a list of them (default: every catalog device); `isl` and `osl` are the prompt
    and output tokens per request. Options: tpot_ms, ttft_ms, max_devices, dtypes, weight_dtypes, kv_dtypes (lists),
    attention_weight_dtype, fp8_scaling,
    mode (aggregated, disaggregated or all: the serving model), framework (the serving model's scheduler and kernel
    tables, default vllm; with prefill: the kernel tables, default each device's), attention_dp_balance (trtllm's
    attention-DP balancing: True for its defaults, or (timeout_iters, batching_wait_iters)), batch_wait (trtllm's
    batch waiting on the aggregated candidates: (timeout_iters, max_tokens_ratio)), prefix_hit, length_spread
    (requests' lengths uniform over isl and osl x (1 +- it)), spec_method,
    spec_tokens, spec_acceptance, spec_accepted_length, spec_draft_model, prefill (the previous release's step model),
    memory_utilization, top, max_candidates (a larger search is refused before it runs), price_per_hour (USD per
    device-hour, or a list of "gpu=USD"), rank_on (expected, the default: targets and ranking on the expected
    times; bound; or cost). `attrs` of the result hold `evaluated`
    (configurations), `seconds` and `reason`, the line saying why no candidate fits and meets the targets ("" when
    the frontier is not empty).
    """
    return _frame("plan", model=model, gpu=gpu, isl=isl, osl=osl, **options)


def serve(model: str, gpu: str, *, isl: int, osl: int, **options) -> pandas.DataFrame:
    """`roofline serve`: one row with what a loaded server delivers (TTFT, TPOT, tokens/s: bounds and expected).

    `model` is a catalog key or the path of a config.json, `gpu` a catalog key or the path of a YAML/JSON file
    holding one device as config.yaml's gpus: writes it, `isl`/`osl` the prompt and output tokens per request.
    Options: concurrency or request_rate (one of the two), framework, attention_dp_balance (True
    or (timeout_iters, batching_wait_iters): trtllm's attention-DP balancing), batch_wait ((timeout_iters,
    max_tokens_ratio): trtllm's batch waiting without attention DP), max_batched_tokens, max_running (sequences
    one engine, each decode worker when disaggregated, runs at once, as the framework counts its own setting),
    length_spread (requests' lengths uniform over isl and osl x (1 +- it); 0: every request exactly them),
    prefix_hit, overflow, benchmark_waves, weight_dtype, act_dtype, kv_dtype, expert_weight_dtype,
    attention_weight_dtype, fp8_scaling, weight_group_size, attention, expert_routing, mla_mode, parallel, tp, pp, ep,
    attention_dp, memory_utilization, spec_method, spec_tokens, spec_acceptance, spec_accepted_length,
    spec_draft_model, mode, prefill_workers, decode_workers, prefill_tp, prefill_pp, prefill_ep, prefill_attention_dp,
    max_devices, calibration, calibration_any_device. `attrs["reason"]` says why a request_rate run does not keep
    up (its queue grows without end; "" where it does), as the command's stderr note.
    """
    return _frame("serve", model=model, gpu=gpu, isl=isl, osl=osl, **options)


def compare(old: str, new: str, **options) -> pandas.DataFrame:
    """`roofline compare`: what moved between two results folders (`old`, `new`: a results/ folder or the project
    folder holding it), one row per value that moved, per model, gpu and stage. Options: threshold ("5%" or 0.05).
    `attrs` of the result hold `compared` (rows compared per table) and `threshold`.
    """
    return _frame("compare", old=str(old), new=str(new), **options)


def _frame(command: str, **options) -> pandas.DataFrame:
    from .cli.api import frame  # on the first call, not at import: pandas and the engine are heavy

    return frame(command, options)


def __getattr__(name: str):
    if name == "RooflineInputError":  # loaded on first use, like the functions' dependencies
        from .engine.errors import RooflineInputError

        return RooflineInputError
    raise AttributeError(f"module 'roofline' has no attribute '{name}'")
