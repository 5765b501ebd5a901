"""The serving options the measured runs' recipes set, which AIConfigurator's silicon_sample.csv rows do not record:
benchmarks/validate_serving.py serves each run with them (its published recipe, not a fit)."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

#: TensorRT-LLM's attention-DP balancing per model, as NVIDIA's recipes set it (the runs record no serving
#: options): DeepSeek-R1's (TensorRT-LLM's perf-overview and DeepSeek guides) holds context requests until every
#: rank has one, timeout_iters 60, batching_wait_iters 0. Its DEP runs agree: their TPOT follows prompts dealt
#: evenly (priced at the busiest rank's prompt it was 77% off, 26% even), their TTFT is 30-185 decode steps at any
#: load. gpt-oss's recipe turns attention DP on without it
BALANCE = {"deepseek-v3": (60, 0)}
#: the InferenceX runs (source 2026-04-06.csv: SemiAnalysis' InferenceMAX/InferenceX sweeps), served at their
#: recipes' settings (benchmarks/*_slurm.sh and .github/workflows of SemiAnalysisAI/InferenceX), which the rows do
#: not record. Their client (bench_serving's benchmark_serving.py, --random-range-ratio 0.8 from the workflow
#: template) draws each request's input and output lengths uniformly from [0.8 L, L]: the requests average 0.9 L
#: (INFERENCEX_LENGTHS), served at that mean with lengths spread +-1/9 around it (INFERENCEX_SPREAD: no lockstep
#: groups, roofline.serving.groups.lockstep). Their TensorRT-LLM Llama-3.x-70B recipes (70b_fp8_h200_trt_slurm.sh,
#: 70b_fp4_b200_trt_slurm.sh) turn batch waiting on for 1k/1k below TP 8 alone: batch_wait_timeout_iters 20,
#: batch_wait_max_tokens_ratio 0.9 ("will improve the performance"): those runs' TTFT is ~19 decode steps above
#: the 1k/8k runs' at the same plan and load, which the hold explains (roofline.serving.holds.batch_wait)
#: The package's db-dump rows are the same harness's runs, from its database: 309 of their 548 aggregated rows repeat a
#: configuration of 2026-04-06.csv (model, GPU, plan, lengths, concurrency), most with the same measurement (median
#: ratio of TTFT and of TPOT 1.000), and its multi-node (disaggregated) workflow template sets RANDOM_RANGE_RATIO 0.8
#: as its single-node one does
INFERENCEX = ("source_file=2026-04-06.csv", "db-dump/")
INFERENCEX_LENGTHS = 0.9
INFERENCEX_SPREAD = 0.1 / 0.9
INFERENCEX_BATCH_WAIT = {("trtllm", "llama-3.1-70b", 1024, 1024): ((20, 0.9), 8)}  # (key): (batch wait, below tp)


def recorded_plan(row, prefix: str = "") -> tuple:
    """(tp, attention dp, moe tp, moe ep) of a run's engine as the package records them (`prefix` "prefill_" or
    "decode_": a disaggregated pool's), but for the aggregated InferenceX runs recorded as tp N x N with experts
    N x N (tp 64 with moe 8 x 8, 16 with 4 x 4, 4 with 2 x 2), which ran TP N with EP N on N GPUs: the ids of those
    in 2026-04-06.csv say so (`..._tp8_ep8_...`), 55 of them have a twin in another source file recorded as tp N,
    moe_tp 1, moe_ep N with identical TTFT and TPOT, and their decode steps are an N-GPU engine's. Another
    harness's tp 4 with experts 2 x 2 (its ids: tp4_epnone) and the disaggregated pools stay as recorded."""
    tp, dp, moe_tp, moe_ep = (row[f"{prefix}{key}"] for key in ("tp_size", "attention_dp_size", "moe_tp_size",
                                                                   "moe_ep_size"))
    named = re.search(r"_tp(\d+)_ep(\d+)_", str(row.get("id", "")))
    if (not prefix and str(row.silicon_data_source).startswith(INFERENCEX) and 1 < moe_tp == moe_ep
            and tp == moe_tp * moe_ep and (named is None or int(named[1]) == int(named[2]) == moe_tp)):
        return moe_tp, dp, 1.0, moe_ep
    return tp, dp, moe_tp, moe_ep


#: InferenceX's disaggregated TensorRT-LLM (Dynamo) recipes, one row per configuration and concurrency of its
#: .github/configs/nvidia-master.yaml (SemiAnalysisAI/InferenceX at 0004cf5), each naming its recipe file
#: (CONFIG_FILE=recipes/trtllm/<gpu>-<precision>/<lengths>/<stp|mtp>/ctx<X>_gen<Y>_<tep|dep><N>_batch<B>_...yaml of
#: srt-slurm): decode_max_batch_size is the decode engine's max_batch_size as the file sets it (per attention-DP rank;
#: the 73 files the DeepSeek runs match were read from srt-slurm forks, `source` names which, 4 of them set another
#: value than the <B> of their name; the other rows take the name's). Most recipes run more users than the decode
#: workers' slots (gb300-fp8 1k1k ctx1_gen4_tep8_batch4 at 24 users: 4 workers x max_batch_size 4 = 16 slots): the
#: rest wait for a slot with their prompts computed
RECIPES = Path(__file__).resolve().parent / "recipes" / "inferencex_disagg_trtllm.csv"
#: the runners' names there -> catalog keys
RUNNERS = {"b200-multinode": "b200", "b300-multinode": "b300", "h100-multinode": "h100-sxm",
           "h200-multinode": "h200-sxm", "gb200": "gb200-gpu", "gb300": "gb300-gpu"}


@lru_cache(maxsize=1)
def _disaggregated_recipes():
    import pandas as pd

    table = pd.read_csv(RECIPES)
    table["gpu"] = table.runner.map(RUNNERS)
    return table


def engine_caps(row) -> tuple[int | None, int | None]:
    """(the decode workers' max_batch_size per attention-DP rank, the prefill workers' max_num_tokens) of a
    disaggregated InferenceX TensorRT-LLM run, from the recipe of its configuration (model, GPU, precision, lengths,
    concurrency, worker counts and plans): the single-token (stp) recipe where MTP and stp ones match; None where no
    recipe, or recipes that disagree, match (the prefill budget: where no file was read)."""
    if row.get("mode") != "disagg" or row.backend != "trtllm" or not str(row.silicon_data_source).startswith(
            INFERENCEX):
        return None, None
    table = _disaggregated_recipes()
    match = table[(table.model == row.model) & (table.gpu == row.gpu) & (table.precision == row.precision)
                  & (table.isl == row.isl) & (table.osl == row.osl) & (table.concurrency == row.concurrency)]
    for side in ("prefill", "decode"):
        ranks = row[f"{side}_attention_dp_size"]
        dp = ranks == ranks and ranks > 1
        width = max(row[f"{side}_tp_size"], ranks if dp else 1)
        match = match[(match[f"{side}_workers"] == row[f"{side}_num_workers"]) & (match[f"{side}_tp"] == width)
                      & (match[f"{side}_dp_attn"] == dp)]
    single = match[match.spec_decoding != "mtp"]
    match = single if len(single) else match
    return tuple(_one(match[column]) for column in ("decode_max_batch_size", "prefill_max_num_tokens"))


def _one(values) -> int | None:
    """The value all of `values` agree on (missing ones left out), else None."""
    distinct = set(values.dropna())
    return int(distinct.pop()) if len(distinct) == 1 else None


class Recipe(NamedTuple):
    """A run as its client sent it: the row at its mean lengths, their spread, the server's batch waiting, its
    decode workers' cap on running sequences and its prefill workers' token budget (disaggregated)."""

    row: object
    batch_wait: tuple | None = None
    length_spread: float = 0.0
    max_running: int | None = None
    max_batched_tokens: int | None = None


def recipe(row) -> Recipe:
    """INFERENCEX runs at their mean lengths, spread, and where their recipe sets it with batch waiting; other runs
    as recorded (fixed lengths: their clients send every request at isl/osl, ignoring EOS), without it."""
    if not str(row.silicon_data_source).startswith(INFERENCEX):
        return Recipe(row)
    wait, below = INFERENCEX_BATCH_WAIT.get((row.backend, row.model, int(row.isl), int(row.osl)), (None, 0))
    caps = engine_caps(row)  # the recipe's, matched at the lengths the run records
    row = row.copy()
    row["isl"], row["osl"] = round(row.isl * INFERENCEX_LENGTHS), round(row.osl * INFERENCEX_LENGTHS)
    return Recipe(row, wait if row.tp_size < below else None, INFERENCEX_SPREAD, *caps)
