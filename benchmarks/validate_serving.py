"""Served predictions against measured served runs: `roofline serve` on every row of AIConfigurator's
`systems/silicon_sample.csv` (aiconfigurator-core, Apache-2.0) whose model and device we support.

Run: python benchmarks/validate_serving.py [--fit] [--rows N]   (needs `pip install aiconfigurator-core`; not a
test; `--what-if-isl F --source TEXT` instead serves one harness's rows at F x their isl, `--what-if-slots N
--source TEXT` with N fewer requests in flight than their recorded batch). Prints MAPE of TTFT and
TPOT per (model, system, mode) and overall, for the serving model and for today's
step model (TTFT = one request's prefill; TPOT = one decode step at batch = concurrency and the mean KV length),
the acceptance subsets (the dense one also per harness and framework, with each group's share of its TTFT
MAPE), and every measurement that beats its bound.

Each row is served at its own plan (tp, ep, data-parallel attention; disaggregated: both pools and their worker
counts), precision (fp8 runs: fp8 weights, activations and KV cache; fp4: NVFP4 weights and activations, fp8 KV,
the attention projections 16-bit where the model's NVFP4 checkpoint keeps them so (NVFP4_FILES);
unlabelled and bf16 runs: bf16 throughout), isl/osl, concurrency (the closed loop; users beyond the cache's capacity
wait: `--overflow queue`; a run whose client concurrency is a whole multiple of the recorded batch ran that many
data-parallel replicas, each served at its share) and framework; SemiAnalysis' InferenceX runs at their recipes'
mean and spread lengths and TensorRT-LLM batch waiting (INFERENCEX), DeepSeek's TensorRT-LLM runs at NVIDIA's
attention-DP balancing (BALANCE; both in served_recipes.py). --fit refits the per-framework constants (host
time per step, per request, lockstep share, disaggregated hand-over) on the even rows of each framework by
coordinate descent and reports the odd rows apart (fit / held-out); paste the printed FITTED into
roofline/serving/framework.py.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from served_recipes import BALANCE, recipe, recorded_plan  # noqa: E402  (beside this script)
from serving_misses import by_harness, dataset, largest_misses, mape, table  # noqa: E402

from roofline.engine import hardware, models  # noqa: E402
from roofline.engine.errors import RooflineInputError  # noqa: E402
from roofline.engine.model_spec import ModelSpec  # noqa: E402
from roofline.engine.parallel import Parallel  # noqa: E402
from roofline.engine.scenario import Scenario  # noqa: E402
from roofline.estimate.expected import analyze  # noqa: E402
from roofline.serving import framework as fw  # noqa: E402
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_aggregated, serve_disaggregated  # noqa: E402

#: the package's model paths -> catalog keys (DeepSeek-R1 and V3.1 share DeepSeek-V3's architecture)
MODELS = {
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b", "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b", "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b", "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3", "deepseek-ai/DeepSeek-R1": "deepseek-v3",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-v3", "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
    "openai/gpt-oss-120b": "gpt-oss-120b",
}
#: models with no catalog row, read from the config.json the package ships (model_configs/{org}--{name}_config.json):
#: the keys they get here
FROM_CONFIG = {"MiniMaxAI/MiniMax-M2.5": "minimax-m2.5", "moonshotai/Kimi-K2.5": "kimi-k2.5",
               "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b", "zhipuai/GLM-5": "glm-5"}
#: served model paths whose config.json the package ships under another organization's name
CONFIG_FILES = {"zhipuai/GLM-5": "zai-org/GLM-5"}
SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200", "b300_sxm": "b300",
           "gb200": "gb200-gpu", "gb300": "gb300-gpu"}
#: precision -> (weight, activation, KV cache) dtypes
PRECISIONS = {"fp8": ("fp8", "fp8", "fp8"), "bf16": ("bf16", "bf16", "bf16"), "fp4": ("nvfp4", "nvfp4", "fp8"),
              "int4": ("native", "bf16", "bf16")}  # Kimi-K2.5's own int4 experts (W4A16), 16-bit elsewhere
DENSE = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-32b")
#: a closed-loop benchmark's length in waves of N requests (the first wave arrives at once); fitted with --fit
WAVES = 10.0
#: coordinate-descent rounds of --fit (each framework's constants, then the waves)
ROUNDS = 1


#: devices where TensorRT-LLM serves gpt-oss's MXFP4 experts with MXFP8 activations: its TRTLLM MoE backend, the
#: default on Blackwell (TensorRT-LLM's gpt-oss deployment guide; Hopper's default, Triton, keeps BF16 activations).
#: The package measures both kernels; the W4A16 ones are 2.5-3.5x slower at decode batches
W4A8_DEVICES = ("b200", "b300", "gb200-gpu", "gb300-gpu")


#: each model's NVFP4 checkpoint as the package ships its quantization file (model_configs/): its fp4 runs keep the
#: attention projections 16-bit where the file's exclude (ignore) list names self_attn (attention_16bit)
NVFP4_FILES = {"deepseek-v3": "nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json",
               "kimi-k2.5": "nvidia--Kimi-K2.5-NVFP4_config.json",
               "glm-5": "nvidia--GLM-5-NVFP4_hf_quant_config.json",
               "minimax-m2.5": "nvidia--MiniMax-M2.5-NVFP4_hf_quant_config.json",
               "qwen3.5-397b-a17b": "nvidia--Qwen3.5-397B-A17B-NVFP4_hf_quant_config.json",
               "qwen3-235b-a22b": "nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json"}


@lru_cache(maxsize=None)
def attention_16bit(key: str) -> bool:
    """Whether `key`'s NVFP4 checkpoint leaves the attention projections unquantized (NVIDIA's DeepSeek-V3.1, Kimi,
    GLM-5, MiniMax and Qwen3.5 files do; Qwen3-235B's and the dense models' quantize them)."""
    if key not in NVFP4_FILES:
        return False
    import json
    from importlib import resources
    data = json.loads(resources.files("aiconfigurator_core").joinpath("model_configs", NVFP4_FILES[key]).read_text())
    quantization = data.get("quantization") or data.get("quantization_config") or data
    excluded = quantization.get("exclude_modules") or quantization.get("ignore") or []
    return any("self_attn" in str(pattern) for pattern in excluded)


def attention_dtype(row) -> str:
    """The attention projections' weight dtype of a run: bf16 in an fp4 run of a checkpoint that keeps them 16-bit,
    else as the other weights ("")."""
    return "bf16" if row.precision == "fp4" and attention_16bit(row.model) else ""


@lru_cache(maxsize=None)
def model_of(key: str) -> ModelSpec:
    """The catalog's model, or one read from the package's config.json (FROM_CONFIG)."""
    paths = {name: path for path, name in FROM_CONFIG.items()}
    if key not in paths:
        return models.get_model(key)
    from importlib import resources
    name = CONFIG_FILES.get(paths[key], paths[key]).replace("/", "--") + "_config.json"
    return models.model_from_hf_config(str(resources.files("aiconfigurator_core").joinpath("model_configs", name)),
                                       key)


def fp8_scaling(row) -> str:
    """How a run's fp8 weights are scaled, as the package records it (`gemm_quant_mode`): fp8_block = block."""
    return "block" if row.gemm_quant_mode == "fp8_block" else "tensor"


def precision(row) -> tuple[str, str, str]:
    """(weight, activation, KV) dtypes of a run; gpt-oss's fp4 runs are its native MXFP4 experts (16-bit rest; fp8
    activations under TensorRT-LLM on Blackwell, W4A8_DEVICES)."""
    if row.model.startswith("gpt-oss") and row.precision == "fp4":
        return "native", "fp8" if row.backend == "trtllm" and row.gpu in W4A8_DEVICES else "bf16", "bf16"
    return PRECISIONS[row.precision]


def replicas(data: pd.DataFrame) -> np.ndarray:
    """Data-parallel replicas of the recorded plan each run served (the client's users split evenly over them).

    Some aggregated runs were served by several replicas: the client's concurrency is a whole multiple (2-64) of the
    recorded per-replica batch; each replica serves its share (served as one replica at concurrency / replicas;
    tokens/s compared per replica). Under data-parallel attention the recorded batch is per attention rank (client
    concurrency = attention_dp_size x batch_size in 168 of the 169 aggregated runs with DP attention; the other
    records its client concurrency as its batch): one engine's batch is its ranks' together."""
    ranks = data.attention_dp_size.where(data.attention_dp_size > 1, 1.0).fillna(1.0)
    ratio = data.concurrency / (data.batch_size * ranks)
    several = (data["mode"] == "agg") & (ratio > 1) & (ratio == ratio.round())
    return np.where(several, ratio, 1.0)


def silicon() -> pd.DataFrame:
    try:
        from importlib import resources
        path = resources.files("aiconfigurator_core").joinpath("systems/silicon_sample.csv")
    except ModuleNotFoundError:
        sys.exit("needs aiconfigurator-core: pip install aiconfigurator-core")
    data = pd.read_csv(str(path))
    data["concurrency"] = data.silicon_data_source.str.extract(r"silicon_concurrency=(\d+)")[0].astype(float)
    data["concurrency"] = data.concurrency.fillna(data.batch_size)
    data["replicas"] = replicas(data)
    data["concurrency"] = data.concurrency / data.replicas
    data["model"], data["gpu"] = data.model_path.map({**MODELS, **FROM_CONFIG}), data.system.map(SYSTEMS)
    data["precision"] = data.precision.fillna("bf16")
    return data[data.model.notna() & data.gpu.notna()].reset_index(drop=True)


def plan(tp, dp, moe_tp, moe_ep) -> Parallel | None:
    """The package's (tp, attention dp, moe tp, moe ep) as our plan, or None where ours cannot express it."""
    tp, dp, moe_ep = (int(v) if v == v and v else 1 for v in (tp, dp, moe_ep))  # NaN and 0: one
    if dp <= 1:
        return Parallel(tp=tp, ep=moe_ep) if tp % moe_ep == 0 else None
    if tp == 1 and moe_ep == dp:
        return Parallel(tp=dp, ep=dp, attention_dp=True)
    return None


def serve_row(row, fitted: dict | None = None, waves: float = WAVES) -> dict:
    """The served row of one measured run (raises RooflineInputError where it cannot be served)."""
    if not row.concurrency == row.concurrency:
        raise RooflineInputError("no concurrency recorded")
    row, batch_wait, spread, max_running, max_batched_tokens = recipe(row)
    model, gpu = model_of(row.model), hardware.get_accelerator(row.gpu)
    weight, act, kv = precision(row)
    prefix = "decode_" if row["mode"] == "disagg" else ""
    decode = plan(*recorded_plan(row, prefix))
    if decode is None:
        raise RooflineInputError("plan not expressible (tensor parallelism inside data-parallel attention)")
    scenario = Scenario(weight_dtype=weight, act_dtype=act, kv_dtype=kv, parallel=decode,
                        attention_weight_dtype=attention_dtype(row), fp8_scaling=fp8_scaling(row))
    served = prepare_served(model, gpu, scenario, framework=row.backend, fitted=(fitted or {}).get(row.backend),
                            max_batched_tokens=max_batched_tokens,
                            dp_balance=BALANCE.get(row.model) if row.backend in fw.BALANCING else None,
                            batch_wait=batch_wait, max_running=max_running)
    cap = row.get("running_cap", np.nan)
    if cap == cap:  # a what-if's cap on the requests in flight (what_if_slots)
        served = replace(served, framework=replace(served.framework, max_running=float(cap)))
    workload = Workload(isl=int(row.isl), osl=int(row.osl), concurrency=int(row.concurrency), length_spread=spread)
    if row["mode"] != "disagg":
        return serve_aggregated(served, workload, overflow="queue", waves=waves)
    prefill = plan(*recorded_plan(row, "prefill_"))
    if np.isnan(row.prefill_num_workers) or np.isnan(row.decode_num_workers):
        raise RooflineInputError("worker counts not recorded")
    if prefill is None:
        raise RooflineInputError("plan not expressible (tensor parallelism inside data-parallel attention)")
    pools = Disaggregation(int(row.prefill_num_workers), int(row.decode_num_workers), prefill)
    return serve_disaggregated(served, workload, pools, overflow="queue", waves=waves)


def today_row(row) -> tuple[float, float]:
    """Today's step model: (TTFT = one request's prefill, TPOT = one decode step at batch = concurrency per decode
    worker and the mean KV length), expected times."""
    row = recipe(row).row
    model, gpu = model_of(row.model), hardware.get_accelerator(row.gpu)
    weight, act, kv = precision(row)
    disagg = row["mode"] == "disagg"
    prefix = "decode_" if disagg else ""
    decode = plan(*recorded_plan(row, prefix))
    prefill = plan(*recorded_plan(row, "prefill_")) if disagg else decode
    batch = max(int(round(row.concurrency / (row.decode_num_workers if disagg else 1))), 1)
    base = Scenario(weight_dtype=weight, act_dtype=act, kv_dtype=kv, framework=row.backend,
                    attention_weight_dtype=attention_dtype(row), fp8_scaling=fp8_scaling(row))
    ttft = analyze(model, gpu, "prefill", base.with_(parallel=prefill, batch=1, seq_len=int(row.isl)))[1]
    tpot = analyze(model, gpu, "decode", base.with_(parallel=decode, batch=batch,
                                                    seq_len=int(row.isl + row.osl // 2)))[1]
    return ttft["ttft_expected_s"], tpot["tpot_expected_s"]


def predict(data: pd.DataFrame, fitted: dict | None = None, waves: float = WAVES, today: bool = True):
    """Served (and today's) predictions of every row; rows that cannot be served get `skipped` (why)."""
    out = []
    for _, row in data.iterrows():
        record = {"skipped": "", "osl_sent": recipe(row).row.osl}  # the mean output the client asked for
        try:
            served = serve_row(row, fitted, waves)
            record.update({k: served[k] for k in ("ttft_s", "tpot_s", "ttft_expected_s", "tpot_expected_s",
                                                   "tokens_per_s", "fits")})
            if today:
                record["ttft_today_s"], record["tpot_today_s"] = today_row(row)
        except RooflineInputError as error:
            record["skipped"] = str(error)[:80]
        out.append(record)
    return pd.concat([data, pd.DataFrame(out, index=data.index)], axis=1)


def errors(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame[frame.skipped == ""].copy()
    measured_ttft, measured_tpot = frame.silicon_ttft_ms / 1e3, frame.silicon_tpot_ms / 1e3
    frame["ttft_error"] = frame.ttft_expected_s / measured_ttft - 1
    frame["tpot_error"] = frame.tpot_expected_s / measured_tpot - 1
    if "ttft_today_s" in frame:
        frame["ttft_today_error"] = frame.ttft_today_s / measured_ttft - 1
        frame["tpot_today_error"] = frame.tpot_today_s / measured_tpot - 1
    osl = frame.osl_sent if "osl_sent" in frame else frame.osl
    frame["measured_tokens_per_s"] = frame.concurrency * osl / (measured_ttft + (osl - 1) * measured_tpot)
    return frame


def violations(frame: pd.DataFrame) -> pd.DataFrame:
    """Measurements beyond their bound: TTFT or TPOT below it, tokens/s above it."""
    low_ttft = frame.silicon_ttft_ms / 1e3 < frame.ttft_s
    low_tpot = frame.silicon_tpot_ms / 1e3 < frame.tpot_s
    high_rate = frame.measured_tokens_per_s > frame.tokens_per_s
    bad = frame[low_ttft | low_tpot | high_rate]
    return bad[["model", "gpu", "mode", "backend", "precision", "isl", "osl", "concurrency", "silicon_ttft_ms",
                "ttft_s", "silicon_tpot_ms", "tpot_s", "measured_tokens_per_s", "tokens_per_s"]]


def calibration_limit(frame: pd.DataFrame) -> pd.DataFrame:
    """A diagnostic, not a prediction: TPOT MAPE of the rows whose prompts matter (isl > osl / 8) once each (model,
    gpu, framework, precision)'s expected decode step is rescaled by its median error on the decode-dominated rows
    (isl <= osl / 8, the 1024/8192 runs): what a measured kernel table that got the decode step right would leave
    to the serving model's structure."""
    keys = ["model", "gpu", "backend", "precision"]
    decode = frame[frame.isl <= frame.osl / 8]
    scale = (1 + decode.groupby(keys).tpot_error.median()).rename("scale")
    rest = frame[frame.isl > frame.osl / 8].join(scale, on=keys).dropna(subset=["scale"])
    rescaled = (1 + rest.tpot_error) / rest.scale - 1
    return pd.DataFrame({"rows": [len(rest)], "TPOT MAPE %": [mape(rest.tpot_error)],
                         "TPOT MAPE rescaled %": [mape(rescaled)]},
                        index=["dense agg, isl > osl / 8 (calibration limit)"]).round(1)


#: a dataset one of whose runs reaches this share of its roofline bound on tokens/s is flagged (at_the_roof): served
#: runs reach a median 0.33 and a 90th percentile 0.54 of it
AT_ROOF = 0.9


def at_the_roof(frame: pd.DataFrame) -> pd.Series:
    """Rows of the datasets with a run at AT_ROOF of its bound tokens/s or more. A diagnostic, not a filter on the
    acceptance: the bound computes every prompt token at the device's compute roof, so a run near it had either
    kernels beyond any others measured here, or prompts the server did not compute (prefix-cache hits on repeated
    prompts, which the runs do not record). vLLM's Llama-3.1-8B FP8 runs on an H200 reach 0.94 of it at 2000/100
    and 64 users (its prompts alone at 86% of the fp8 peak: 58.9 requests/s x 29.0 TFLOP), measure TPOT at ~0.5x
    ours and ~0.7x SGLang's on the same device and shapes, and match ours at a 95% prefix hit (`roofline serve
    --prefix-hit 0.95`: 10.7 ms and 5,858 tokens/s against the measured 9.7 ms and 5,893)."""
    source = dataset(frame)
    ratio = frame.measured_tokens_per_s / frame.tokens_per_s
    flagged = ratio.groupby(source).max() >= AT_ROOF
    return source.map(flagged).fillna(False).astype(bool)


def what_if(data: pd.DataFrame, source: str, change, label: str, fitted: dict | None, waves: float) -> pd.DataFrame:
    """MAPE and bias of the rows whose source names `source`, as recorded and served after `change` (rows -> rows),
    side by side under `label`."""
    rows = data[data.silicon_data_source.fillna("").str.contains(source, regex=False)]
    if rows.empty:
        raise SystemExit(f"--source: no run's silicon_data_source holds {source!r}")
    by = ["backend", "model", "gpu", "mode"]
    recorded = table(errors(predict(rows, fitted, waves, today=False)), by)
    changed = table(errors(predict(change(rows), fitted, waves, today=False)), by)
    return pd.concat({"as recorded": recorded, label: changed}, axis=1)


def what_if_isl(data: pd.DataFrame, factor: float, source: str, fitted: dict | None, waves: float) -> pd.DataFrame:
    """what_if at `factor` x the rows' isl (a diagnostic of a harness whose prompts may hold more tokens than it
    records: random token ids decoded to text and tokenized again by the server come back longer with some
    tokenizers)."""
    return what_if(data, source, lambda rows: rows.assign(isl=(rows.isl * factor).round()), f"at {factor:g} x isl",
                   fitted, waves)


def what_if_slots(data: pd.DataFrame, short: float, source: str, fitted: dict | None, waves: float) -> pd.DataFrame:
    """what_if with `short` fewer requests in flight than each run's recorded batch (its server's cap: serve_row's
    `running_cap`; a fraction is a slot held part of the time). A diagnostic of a server whose cap is its client's
    concurrency and which holds one of its slots (TensorRT-LLM's CUDA-graph padding request took a sequence slot
    until its releases of late 2025): every request then waits for the next one to end, about 1 / X, which grows with
    the output length at a fixed concurrency."""
    return what_if(data, source, lambda rows: rows.assign(running_cap=np.maximum(rows.batch_size - short, 1.0)),
                   f"{short:g} slots short", fitted, waves)


def fit(data: pd.DataFrame, frameworks: tuple[str, ...] = ()) -> tuple[dict, float]:
    """Per-framework (step, request, sync, hand-over, per sequence) and the global waves by coordinate descent on the
    even rows (each framework's constants on its own rows; the hand-over on its disaggregated rows)."""
    grids = ((0.0, 0.0005, 0.001, 0.002, 0.003, 0.005), (0.0, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.5),
             (0.0, 0.25, 0.5, 0.75, 1.0), (0.0, 0.1, 0.2, 0.4, 0.6, 0.8, 1.2),
             (0.0, 2e-6, 4e-6, 7e-6, 1e-5, 1.6e-5, 2.4e-5, 3.2e-5, 4.8e-5))
    fitted, waves = {key: tuple(fw.FITTED[key]) for key in fw.FITTED}, WAVES
    train = data.iloc[::2]

    def loss(constants, w, rows):
        predicted = predict(rows, constants, w, today=False)
        if "ttft_expected_s" not in predicted:  # none of these rows could be served
            return float("inf")
        frame = errors(predicted)
        return (mape(frame.ttft_error) + mape(frame.tpot_error)) if len(frame) else float("inf")

    for _ in range(ROUNDS):
        for key in frameworks or fitted:
            for i, grid in enumerate(grids):
                rows = train[train.backend == key]
                if i == 3:  # the hand-over: on the disaggregated rows alone (where the framework has any)
                    rows = rows[rows["mode"] == "disagg"]
                    if rows.empty:
                        continue
                trials = {value: {**fitted, key: fitted[key][:i] + (value,) + fitted[key][i + 1:]} for value in grid}
                scores = {value: loss(trial, waves, rows) for value, trial in trials.items()}
                fitted = trials[min(scores, key=scores.get)]
                name = ("step", "request", "sync", "handoff", "per sequence")[i]
                print(f"  {key} {name}: {scores}", file=sys.stderr, flush=True)
        scores = {w: loss(fitted, w, train) for w in (0.0, 3.0, 5.0, 10.0, 20.0)}
        waves = min(scores, key=scores.get)
        print(f"  waves: {scores}", file=sys.stderr, flush=True)
    return fitted, waves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit the per-framework constants (even rows)")
    parser.add_argument("--rows", type=int, help="only the first N supported rows (a quick look)")
    parser.add_argument("--what-if-isl", type=float, metavar="FACTOR",
                        help="instead of the report: the rows of --source as recorded and served at FACTOR x isl")
    parser.add_argument("--what-if-slots", type=float, metavar="N",
                        help="instead of the report: the rows of --source as recorded and served with N fewer requests "
                             "in flight than their recorded batch (a fraction: a slot held part of the time)")
    parser.add_argument("--source", default="", help="with a --what-if: rows whose silicon_data_source holds it")
    args = parser.parse_args()
    what_ifs = [name for name in ("what_if_isl", "what_if_slots") if getattr(args, name) is not None]
    if args.what_if_isl is not None and not args.what_if_isl > 0:
        parser.error(f"--what-if-isl: {args.what_if_isl} is not allowed; expected a factor above 0")
    if args.what_if_slots is not None and not args.what_if_slots > 0:
        parser.error(f"--what-if-slots: {args.what_if_slots} is not allowed; expected a number of slots above 0")
    if len(what_ifs) > 1:
        parser.error("--what-if-isl, --what-if-slots: one what-if at a time")
    if what_ifs and args.fit:
        parser.error(f"--{what_ifs[0].replace('_', '-')}: serves with the fitted constants as shipped; drop --fit")
    if args.source and not what_ifs:
        parser.error("--source: selects the rows of --what-if-isl or --what-if-slots; give one")
    data = silicon()
    data = data.iloc[:args.rows] if args.rows else data
    if what_ifs:
        pd.set_option("display.width", 250)
        run = {"what_if_isl": what_if_isl, "what_if_slots": what_if_slots}[what_ifs[0]]
        print(run(data, getattr(args, what_ifs[0]), args.source, None, WAVES).to_string())
        return
    fitted, waves = (fit(data) if args.fit else (None, WAVES))
    if args.fit:
        print(f"FITTED = {fitted}\nWAVES = {waves}\n")
    predicted = predict(data, fitted, waves)
    frame = errors(predicted)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    print(f"{len(frame)} rows served of {len(data)} supported; not served:")
    print(predicted[predicted.skipped != ""].groupby(["model", "skipped"]).size().to_string(), "\n")
    print(table(frame, ["model", "gpu", "mode"]).to_string(), "\n")
    print(table(frame.assign(all="all"), ["all"]).to_string(), "\n")
    half = frame.index % 2 == 1
    print("held-out (odd) rows:\n" + table(frame[half].assign(all="odd"), ["all"]).to_string(), "\n")
    dense = frame[frame.model.isin(DENSE) & frame.gpu.isin(("h100-sxm", "h200-sxm", "b200")) & (frame["mode"] == "agg")]
    print("acceptance: aggregated dense on H100/H200/B200:\n"
          + table(dense.assign(all="dense agg"), ["all"]).to_string())
    deepseek = frame[(frame.model == "deepseek-v3") & (frame["mode"] == "disagg")]
    print("acceptance: disaggregated DeepSeek:\n" + table(deepseek.assign(all="deepseek disagg"), ["all"]).to_string())
    print(calibration_limit(dense).to_string())
    print("\ndense agg per harness and framework:\n" + by_harness(dense).to_string())
    for name, rows in (("dense agg", dense), ("deepseek disagg", deepseek)):
        for quantity in ("ttft", "tpot"):
            print(f"\nlargest {quantity.upper()} misses, {name}:\n" + largest_misses(rows, quantity).to_string())
    roof = at_the_roof(dense)
    if roof.any():
        print(f"\ndiagnostic, not the acceptance: datasets with a run at >= {AT_ROOF:.0%} of its bound tokens/s "
              "(prompts the server did not compute?):")
        print(dense[roof].groupby(dataset(dense[roof])).size().rename("rows").to_string())
        print(table(dense[~roof].assign(all="dense agg without them"), ["all"]).to_string())
    bad = violations(pd.concat([dense, deepseek]))
    print(f"\nmeasurements beyond their bound in those rows: {len(bad)}")
    if len(bad):
        print(bad.to_string())
    ratio = frame.measured_tokens_per_s / frame.tokens_per_s
    long_prompts = frame.isl >= 4 * frame.osl
    print(f"\nmeasured / bound tokens/s: median {ratio.median():.2f}, p90 {ratio.quantile(0.9):.2f} over "
          f"{len(frame)} rows; median {ratio[long_prompts].median():.2f} over the {long_prompts.sum()} with "
          "isl >= 4 osl")
    everywhere = violations(frame)
    print(f"\nmeasurements beyond their bound in all {len(frame)} rows served: {len(everywhere)}")
    if len(everywhere):
        print(everywhere.to_string())


if __name__ == "__main__":
    main()
