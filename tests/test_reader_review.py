"""What a performance engineer reading the reports before they go to the wiki found (review of 2026-12-05): a lead
resting on the pooled fallback, expected times without their framework or estimate, wording that misread."""
import numpy as np
import pandas as pd
import pytest

from roofline.figures.batch_sweep import largest_fitting
from roofline.report import decision
from roofline.report.served import _fallback_beside, _ordered
from roofline.serving.marks import mark_frontier


def _row(gpu, estimate, expected, bound=None, **extra):
    return {"gpu": gpu, "estimate": estimate, "tokens_per_s_per_device_expected": expected,
            "tokens_per_s_per_device": bound if bound is not None else 2 * expected, **extra}


def test_the_chosen_plan_rests_on_measured_kernels_where_some_device_has_them():
    # every default report starred the MI300X, whose expected times are the pooled A100/H100 fallback's
    records = [_row("mi300x", "default", 21100.0), _row("mi300x", "default", 9000.0),
               _row("h200-sxm", "calibrated", 11900.0), _row("h100-sxm", "partial", 8000.0)]
    per_gpu, overall = np.array([0, 1, 2, 3]), np.array([0, 2])
    marked = mark_frontier(records, per_gpu, overall, "expected")
    assert [row["chosen"] for row in marked] == [False, False, True, False]
    assert [row["recommended"] for row in marked] == [True, False, True, True]
    assert [row["on_frontier"] for row in marked] == [True, False, True, False]
    # ranked on the bounds (comparable across devices) the most tokens/s per device is chosen, whatever its estimate
    assert [row["chosen"] for row in mark_frontier(records, per_gpu, overall, "bound")] == [True, False, False, False]
    # with no measured kernels anywhere the fallback's best is chosen
    fallback = [_row("mi300x", "default", 21100.0), _row("a6000", "default", 3000.0)]
    assert [row["chosen"] for row in mark_frontier(fallback, np.array([0, 1]), np.array([0]), "expected")] == \
        [True, False]


def test_page_one_leads_with_the_chosen_plan_and_names_the_fallback_that_expects_more():
    plans = pd.DataFrame([
        _row("mi300x", "default", 21100.0, 37900.0, deployment="1 x Instinct MI300X", recommended=True,
             chosen=False),
        _row("h200-sxm", "calibrated", 11900.0, 32800.0, deployment="1 x H200 SXM 141GB", recommended=True,
             chosen=True)])
    ordered = _ordered(plans, {})
    assert list(ordered["gpu"]) == ["h200-sxm", "mi300x"]
    assert _fallback_beside(ordered.iloc[0], ordered) == (
        "; 1 x Instinct MI300X expects more, 21,100 tokens/s per GPU, but on a default estimate (no measured "
        "kernels of its own), so it ranks after the GPUs with them: compare the bounds, 37,900 against 32,800")
    slower = ordered.assign(tokens_per_s_per_device_expected=[11900.0, 5000.0])
    assert _fallback_beside(slower.iloc[0], slower) == ""  # nothing set aside that expects more


def test_expected_times_carry_their_estimate_and_the_column_its_framework():
    calibrated = pd.Series({"estimate": "calibrated"})
    assert decision.estimate_mark(calibrated) == ""
    assert decision.estimate_mark(pd.Series({"estimate": "default"})) == "†"
    assert decision.estimate_mark(pd.Series({"estimate": "partial"})) == "‡"
    note = decision.estimate_note(["calibrated", "partial", "default"])
    assert note.startswith("† default estimate") and "; ‡ partial estimate" in note and note.endswith(".")
    assert decision.estimate_note(["calibrated"]) == ""
    # "": no expected time; "none": the pooled fallback, whose row carries the † of a default estimate
    assert decision.expected_header(["trtllm", "none", ""]) == "Expected (trtllm)"
    assert decision.expected_header(["trtllm", "vllm"]) == "Expected"  # each cell names its own then


def test_the_tensor_parallel_lever_says_how_many_devices():
    # "TP ×2 on 2× devices" read as "on 2 devices" for a deployment going from TP 2 to TP 4
    label = "twice the tensor parallelism: 4 devices (TP 4)"
    assert decision.more_devices_name(label) == "double TP (4 devices)"
    across = "twice the tensor parallelism: 16 devices (TP 16, EP 16); its tensor-parallel group spans 2 " \
             "scale-up domains of 8"
    assert decision.more_devices_name(across) == "double TP (16 devices, across domains)"


def test_the_batch_sweep_names_the_largest_batch_that_fits_between_its_swept_batches():
    # Llama-3.1-70B on 2 H100s (TP 2): the figure said "from batch 32" where the decode table's maximum is 20.
    # Footprint = 70 GB + 0.5 GB per sequence; usable 80.2 GB: (80.2 - 70) / 0.5 = 20.4 -> 20
    rows = pd.DataFrame({"batch": [1, 2, 4, 8, 16, 32, 64]})
    rows["footprint_bytes"] = 70e9 + 0.5e9 * rows["batch"]
    rows["fits"] = rows["footprint_bytes"] <= 80.2e9
    assert largest_fitting(rows, 80.2e9) == 20
    assert largest_fitting(rows, None) is None  # no usable memory known: the swept batch is said
    assert largest_fitting(rows.assign(fits=True), 80.2e9) is None  # every batch fits: nothing to place


def test_ridge_writes_csv_and_json_in_si_units(capsys):
    # the one subcommand without --format: H100 SXM fp8, 1978.9 TFLOP/s over 3.35 TB/s = 590.7 FLOP/byte
    import csv
    import io
    import json

    from roofline.cli.app import main

    assert main(["ridge", "--gpu", "h100-sxm", "--dtype", "fp8", "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (float(row["peak_flops_per_s"]), float(row["bandwidth_bytes_per_s"])) == (1978.9e12, 3.35e12)
    assert float(row["ridge_flop_per_byte"]) == pytest.approx(1978.9e12 / 3.35e12)
    assert main(["ridge", "--gpu", "h100-sxm", "--dtype", "fp8", "--model", "llama-3.1-8b", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["model"] == "llama-3.1-8b" and isinstance(row["model_critical_batch"], int)


def test_ranked_on_the_bounds_the_served_rows_follow_the_searchs_choice():
    # the notes had said "measured kernels first" whatever the ranking; on the bounds a default-estimate GPU leads
    from roofline.report.served import ORDERS

    records = [_row("mi300x", "default", 9000.0, 40000.0), _row("h200-sxm", "calibrated", 12000.0, 33000.0),
               _row("h100-sxm", "calibrated", 10000.0, 30000.0)]
    marked = pd.DataFrame(mark_frontier(records, np.array([0, 1, 2]), np.array([0]), "bound"))
    marked.attrs["search"] = {"rank_on": "bound"}
    assert list(_ordered(marked, {})["gpu"]) == ["mi300x", "h200-sxm", "h100-sxm"]
    marked.attrs["search"] = {"rank_on": "expected"}
    assert list(_ordered(marked.assign(chosen=[False, True, False]), {})["gpu"]) == ["h200-sxm", "h100-sxm", "mi300x"]
    assert ORDERS["bound"].startswith("Rows: those that meet the targets in expectation first, then the search's")
    assert "measured kernels" in ORDERS["expected"] and "measured kernels" not in ORDERS["bound"]


def test_the_pareto_caption_says_why_the_star_can_sit_below_a_fallback_device():
    from types import SimpleNamespace

    from roofline.figures.plan import caption

    table = pd.DataFrame([_row("mi300x", "default", 21100.0, recommended=True, chosen=False),
                          _row("h200-sxm", "calibrated", 11900.0, recommended=True, chosen=True)])

    def said(rank_on, frame=table):
        return caption(SimpleNamespace(plan=SimpleNamespace(table=frame, rank_on=rank_on, reason="")))

    assert "star: the chosen one (the best among the devices with measured kernels of their own" in said("expected")
    assert "star: the chosen one, dotted line" in said("bound")  # the bounds rank devices as they are
    assert "star: the chosen one, dotted line" in said("expected", table.assign(estimate="calibrated"))


def test_the_summary_says_whose_kernels_its_expected_times_use():
    from roofline.engine.hardware import get_accelerator
    from roofline.report.summary import frameworks_note

    gpus = {key: get_accelerator(key) for key in ("h100-sxm", "h200-sxm", "mi300x")}
    totals = pd.DataFrame({"gpu": ["h100-sxm", "h200-sxm", "mi300x"], "framework": ["trtllm", "trtllm", "none"]})
    assert frameworks_note(totals, gpus) == ("The expected times use the measured kernels of trtllm (H100 SXM5 80GB, "
                                             "H200 SXM 141GB).")
    assert frameworks_note(totals.assign(framework="none"), gpus) == ""
