"""Expected TPOT against measured served runs, and the per-framework step constants fitted on part of them.

    pip install -e '.[aic]' && python benchmarks/validate_served.py [--baseline ../main]

Runs: the aggregated (one pool of GPUs serves prefill and decode) runs of `aiconfigurator-core`'s
systems/silicon_sample.csv of the dense catalog models (MODELS) whose prompts are short against their outputs
(isl <= osl / 8: a decode step alone describes them; prefill tokens per step ~ concurrency x isl / osl). Each run's
expected TPOT is `tpot_expected_s` of the decode step at the run's tp, its framework (--framework = the backend), KV
length isl + osl / 2 and precision (fp8: fp8 weights, activations and KV cache; bf16: bf16 throughout; fp4: NVFP4
weights and activations, fp8 KV cache), batch = its concurrency, or the largest batch whose KV cache fits the
devices (the server queues the rest: those runs report TTFTs of seconds to minutes).

Step constants (roofline.estimate.step): per framework, the time between two kernels of a step and the per-step
overhead, fitted (least squares on the relative error, both >= 0) on the runs at concurrency FIT_BATCHES and
checked on the others; written to data/calibrations/frameworks.json. Errors per (model, system, framework,
precision, tp) and overall, beside the same error of the checkout given as --baseline (today's main), go to
data/calibrations/served.csv and to validation.csv's `decode_step` rows (the report's caveat quotes those).
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from roofline.engine import hardware, models  # noqa: E402
from roofline.engine.analysis import prepare, totals  # noqa: E402
from roofline.engine.graph import build_operators  # noqa: E402
from roofline.engine.parallel import Parallel  # noqa: E402
from roofline.engine.scenario import Scenario  # noqa: E402
from roofline.estimate import aic_source as src  # noqa: E402
from roofline.estimate import calibration as cal  # noqa: E402
from roofline.estimate.lookup import calibration_for  # noqa: E402
from roofline.estimate.step import Kernels  # noqa: E402

MODELS = {"meta-llama/Llama-3.1-70B": "llama-3.1-70b", "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
          "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b", "Qwen/Qwen3-32B": "qwen3-32b",
          "nvidia/Qwen3-32B-NVFP4": "qwen3-32b"}
PRECISION = {"fp8": ("fp8", "fp8", "fp8"), "bf16": ("bf16", "bf16", "bf16"), "fp4": ("nvfp4", "nvfp4", "fp8")}
#: the runs the step constants are fitted on (the others check them)
FIT_BATCHES = (4, 16, 64)
SERVED = cal.data_dir() / "served.csv"


def runs() -> list[dict]:
    """The decode-dominated aggregated runs of the supported dense models."""
    with (src.package_root() / "systems" / "silicon_sample.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    systems = {name: key for key, name in src.SYSTEMS.items()}
    out = []
    for r in rows:
        if (r["mode"] != "agg" or r["model_path"] not in MODELS or r["system"] not in systems
                or r["precision"] not in PRECISION or int(r["isl"]) * 8 > int(r["osl"])):
            continue
        out.append({"model": MODELS[r["model_path"]], "gpu": systems[r["system"]], "framework": r["backend"],
                    "precision": r["precision"], "tp": int(float(r["tp_size"])), "concurrency": int(float(
                        r["batch_size"])), "isl": int(r["isl"]), "osl": int(r["osl"]),
                    "measured_s": float(r["silicon_tpot_ms"]) / 1e3})
    return out


def scenario(run: dict, batch: int) -> Scenario:
    weight, act, kv = PRECISION[run["precision"]]
    return Scenario(batch=batch, seq_len=run["isl"] + run["osl"] // 2, weight_dtype=weight, act_dtype=act,
                    kv_dtype=kv, parallel=Parallel(tp=run["tp"]), framework=run["framework"])


def running_batch(model, gpu, run: dict) -> int:
    """The concurrency, or the largest batch whose decode step fits the devices (the server queues the rest)."""
    batch = run["concurrency"]
    while batch > 1 and not totals(model, gpu, "decode", scenario(run, batch))["fits"]:
        batch -= 1
    return batch


def kernel_sums(run: dict) -> dict:
    """The run's decode step: bound, sum of its kernels' expected times, kernels launched, estimate."""
    model, gpu = models.catalog()[run["model"]], hardware.catalog()[run["gpu"]]
    batch = running_batch(model, gpu, run)
    sc = prepare(model, gpu, "decode", scenario(run, batch))
    calibration = calibration_for(gpu, run["framework"])
    kernels = Kernels(model, sc, "decode", build_operators(model, "decode", sc), calibration.framework)
    seconds, _ = kernels.seconds(calibration, gpu)
    bound = totals(model, gpu, "decode", sc)["tpot_s"]
    return {**run, "batch": batch, "bound_s": bound, "kernels_s": float(kernels.count @ seconds[:, 0]),
            "launches": float(kernels.count.sum()), "table_framework": calibration.framework}


def fit(rows: list[dict]) -> dict:
    """(kernel_gap_s, step_s) >= 0 minimising the squared relative error of kernels + gap x launches + step."""
    measured = np.array([r["measured_s"] for r in rows])
    target = (measured - np.array([r["kernels_s"] for r in rows])) / measured
    design = np.stack([np.array([r["launches"] for r in rows]) / measured, 1.0 / measured], axis=1)
    best = (0.0, 0.0)
    for columns in ((0, 1), (0,), (1,)):
        solution, *_ = np.linalg.lstsq(design[:, columns], target, rcond=None)
        if (solution >= 0).all():
            candidate = [0.0, 0.0]
            for column, value in zip(columns, solution):
                candidate[column] = float(value)
            if _loss(design, target, candidate) < _loss(design, target, best):
                best = tuple(candidate)
    return {"kernel_gap_s": best[0], "step_s": best[1]}


def _loss(design, target, params) -> float:
    return float(((design @ np.array(params) - target) ** 2).sum())


def baseline(checkout: Path, rows: list[dict]) -> list[float]:
    """tpot_expected_s of another checkout (its own estimator) for the same steps, in a subprocess."""
    code = ("import json,sys\nfrom roofline.estimate.expected import analyze\nfrom roofline.engine import hardware,"
            " models\nfrom roofline.engine.scenario import Scenario\nfrom roofline.engine.parallel import Parallel\n"
            "out=[]\nfor r in json.load(sys.stdin):\n    sc=Scenario(batch=r['batch'], seq_len=r['seq'], "
            "weight_dtype=r['w'], act_dtype=r['a'], kv_dtype=r['kv'], parallel=Parallel(tp=r['tp']))\n"
            "    out.append(analyze(models.catalog()[r['model']], hardware.catalog()[r['gpu']], 'decode', sc)[1]"
            "['tpot_expected_s'])\nprint(json.dumps(out))\n")
    payload = [{"model": r["model"], "gpu": r["gpu"], "batch": r["batch"], "seq": r["isl"] + r["osl"] // 2,
                "w": PRECISION[r["precision"]][0], "a": PRECISION[r["precision"]][1],
                "kv": PRECISION[r["precision"]][2], "tp": r["tp"]} for r in rows]
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps(payload), capture_output=True, text=True,
                          env={"PYTHONPATH": str(checkout / "workflow"), "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(done.stdout)


def summarize(rows: list[dict]) -> list[dict]:
    """Mean absolute relative error per (model, gpu, framework, precision, tp), per part and overall."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["gpu"], r["framework"], r["precision"], str(r["tp"])), []).append(r)
        groups.setdefault(("all", "all", r["framework"], "all", "all"), []).append(r)
        groups.setdefault(("all", "all", r["framework"], "all", str(r["tp"])), []).append(r)
        groups.setdefault(("all", "all", "all", r["precision"], "all"), []).append(r)
        groups.setdefault(("all", "all", "all", "all", "fit" if r["fit"] else "checked"), []).append(r)
        groups.setdefault(("all", "all", "all", "all", "all"), []).append(r)
    out = []
    for (model, gpu, framework, precision, tp), members in groups.items():
        error = np.array([abs(r["expected_s"] / r["measured_s"] - 1) for r in members])
        main = [abs(r["main_s"] / r["measured_s"] - 1) for r in members if r.get("main_s") is not None]
        out.append({"model": model, "gpu": gpu, "framework": framework, "precision": precision, "tp": tp,
                    "runs": len(members), "mape": f"{error.mean():.4f}", "max_error": f"{error.max():.4f}",
                    "mape_main": f"{np.mean(main):.4f}" if main else "",
                    "bound_below_measured": all(r["bound_s"] <= r["measured_s"] for r in members)})
    return out


def write(summary: list[dict], constants: dict) -> None:
    path = cal.data_dir() / "frameworks.json"
    path.write_text(json.dumps({"fitted_on": f"silicon_sample.csv runs at concurrency {list(FIT_BATCHES)} "
                                             f"({src.PACKAGE} {src.package_version()})",
                                "frameworks": constants}, indent=1, sort_keys=True) + "\n")
    with SERVED.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(summary[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(summary)
    validation = cal.data_dir() / "validation.csv"
    with validation.open(newline="") as handle:
        kept = [r for r in csv.DictReader(handle) if r["check"] != "decode_step"]
    overall = next(r for r in summary if r["tp"] == "all" and r["framework"] == "all" and r["precision"] == "all")
    kept.append({"table": "served TPOT (aiconfigurator-core silicon_sample.csv, decode-dominated runs)",
                 "check": "decode_step", "op_class": "", "median_error": overall["mape"],
                 "p90_error": overall["max_error"], "n": overall["runs"]})
    with validation.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(kept[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
    print(f"wrote {path}, {SERVED}, {validation}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout whose estimator to compare (today's main)")
    args = parser.parse_args()
    rows = [kernel_sums(run) for run in runs()]
    constants = {}
    for framework in sorted({r["table_framework"] for r in rows}):
        fitted = [r for r in rows if r["table_framework"] == framework and r["concurrency"] in FIT_BATCHES]
        constants[framework] = {**fit(fitted), "runs": len(fitted)}
    main_times = baseline(args.baseline, rows) if args.baseline else [None] * len(rows)
    for r, main in zip(rows, main_times):
        c = constants[r["table_framework"]]
        r["expected_s"] = max(r["bound_s"], r["kernels_s"] + c["kernel_gap_s"] * r["launches"] + c["step_s"])
        r.update(main_s=main, fit=r["concurrency"] in FIT_BATCHES)
    summary = summarize(rows)
    print("| model | gpu | framework | precision | tp | runs | MAPE | max | MAPE main | bound <= measured |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in summary:
        print("| " + " | ".join(str(v) for v in s.values()) + " |")
    print(json.dumps(constants, indent=1))
    write(summary, constants)


if __name__ == "__main__":
    main()
