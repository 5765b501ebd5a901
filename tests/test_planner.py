"""The deployment search (`roofline plan`): Pareto filter, targets, serving model against the engine, CLI."""
import csv
import io
import json
import re

import numpy as np
import pytest

from roofline.cli import app as cli
from roofline.engine import hardware, models
from roofline.engine.analysis import totals
from roofline.engine.columns import COST_COLUMNS, PLAN_COLUMNS
from roofline.engine.scenario import Scenario
from roofline.estimate.expected import analyze
from roofline.serving import planner

H100 = hardware.get_accelerator("h100-sxm")
LLAMA2 = models.get_model("llama-2-7b")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_pareto_front_on_a_hand_made_set():
    # (x, y): (1,5) (2,4) (3,3) (2,2) (3,1) (1,5 again). Sorted by x, then y: (3,3) (3,1) (2,4) (2,2) (1,5) (1,5):
    # (3,3) is first; (3,1) loses to it; (2,4) has a better y than anything before; (2,2) loses; the first (1,5)
    # beats every y before; its duplicate does not (ties keep the first).
    x = np.array([1.0, 2, 3, 2, 3, 1])
    y = np.array([5.0, 4, 3, 2, 1, 5])
    assert planner.pareto_front(x, y).tolist() == [2, 1, 0]
    assert planner.pareto_front(np.array([1.0]), np.array([1.0])).tolist() == [0]
    assert planner.pareto_front(np.array([]), np.array([])).tolist() == []


@pytest.mark.parametrize("seed", range(6))
def test_pareto_front_prefilter_changes_nothing(seed, monkeypatch):
    # the binned pre-filter of large sets is exact: the same indices, in the same order, as the plain sort, with
    # many ties (values on a coarse grid) and bins much coarser than the values
    rng = np.random.default_rng(seed)
    n = 5000
    x = rng.integers(0, 60, n).astype(float) * rng.choice([1.0, 0.5])
    y = np.floor(rng.gamma(2.0, 3.0, n) * 4) / 4 - 0.05 * x
    plain = planner.pareto_front(x, y)  # below PRUNE_ABOVE: the sort alone
    monkeypatch.setattr(planner, "PRUNE_ABOVE", 0)
    for bins in (1, 7, 64, 4096):
        monkeypatch.setattr(planner, "PRUNE_BINS", bins)
        assert planner.pareto_front(x, y).tolist() == plain.tolist()
    assert len(planner._not_beaten_by_a_higher_bin(x, y)) < n  # it does drop points


def _hand_made_search(tpot_s=None, ttft_s=None):
    """Four candidates of one group (1 device): batch, TTFT, TPOT, fit chosen by hand."""
    group = planner.Group(H100, Scenario())
    batch = np.array([1.0, 2, 4, 8])
    tpot = np.array([0.010, 0.020, 0.040, 0.080])
    return planner.Search(
        model=LLAMA2, workload=planner.Workload(16, 8, tpot_s=tpot_s, ttft_s=ttft_s), groups=[group],
        group=np.zeros(4, dtype=int), batch=batch, ttft_s=np.array([0.5, 0.5, 0.5, 2.0]), tpot_s=tpot, step_s=tpot,
        tokens_per_s=batch / tpot, memory_bound_share=np.ones(4), network_share=np.zeros(4),
        fits=np.array([True, True, True, False]), footprint_bytes=np.full(4, 1e9))


def test_targets_filter_exactly():
    # tokens/s = batch / tpot = 100 for every candidate; tokens/s per user = 100, 50, 25, 12.5
    assert _hand_made_search().meets().tolist() == [True, True, True, False]  # batch 8 does not fit
    assert _hand_made_search(tpot_s=0.020).meets().tolist() == [True, True, False, False]
    assert _hand_made_search(tpot_s=0.020, ttft_s=0.4).meets().tolist() == [False] * 4
    # equal tokens/s per device: the front keeps only the fastest per user (batch 1)
    result = _hand_made_search(tpot_s=0.040)
    assert planner.frontier(result).tolist() == [0]
    assert "lowest TTFT any plan that fits reaches is 500 ms" in planner.no_plan_reason(
        _hand_made_search(ttft_s=0.4))
    assert planner.no_plan_reason(_hand_made_search(tpot_s=0.005)).startswith(
        "no plan meets TPOT <= 5 ms: the lowest TPOT any plan that fits reaches is 10 ms: 1 x H100")


def test_workload_lengths_and_bad_input():
    # decode runs at the mean KV length isl + osl // 2; the fit is checked with the whole request in the cache
    assert planner.Workload(1024, 1024).decode_seq_len == 1536
    assert planner.Workload(1000, 5).decode_seq_len == 1002
    assert planner.Workload(1000, 5).final_seq_len == 1004
    with pytest.raises(ValueError, match="osl: 0 is not allowed"):
        planner.Workload(16, 0).validate()
    with pytest.raises(ValueError, match="prefill: unknown value 'chunky'"):
        planner.Workload(16, 8, prefill="chunky").validate()
    with pytest.raises(ValueError, match=r"4000 \+ 97 = 4097 tokens do not fit the context of llama-2-7b \(4096"):
        planner.search(LLAMA2, [H100], planner.Workload(4000, 97))
    planner.search(LLAMA2, [H100], planner.Workload(4000, 96), batches=(1,), max_devices=1)  # exactly 4096: fine
    with pytest.raises(ValueError, match="dtypes: int4 has no dtype of 8 bits or more for the KV cache"):
        planner.search(LLAMA2, [H100], planner.Workload(16, 8), dtypes=("int4",))
    repeated = planner.search(LLAMA2, [H100], planner.Workload(16, 8), dtypes=("fp16", "fp16"), batches=(1,))
    assert len(repeated) == len(planner.search(LLAMA2, [H100], planner.Workload(16, 8), dtypes=("fp16",),
                                               batches=(1,)))


def test_rows_agree_with_engine_totals():
    """Every number of a row comes from the engine: TPOT = decode totals at the mean length, TTFT = one prefill,
    fits = decode totals at the final length (and the prefill)."""
    workload = planner.Workload(isl=512, osl=256, tpot_s=0.02)
    result = planner.search(LLAMA2, [H100], workload, dtypes=("fp16", "fp8"), batches=(1, 8, 64, 512), max_devices=1)
    assert len(result) == 4 * 2 * 2 * 2  # batches x weight dtypes x KV dtypes x attention kernels
    rows = planner.rows(result, range(len(result)))
    for row in rows[::3]:
        sc = Scenario(batch=row["batch"], seq_len=row["seq_len"], weight_dtype=row["weight_dtype"],
                      act_dtype=row["act_dtype"], kv_dtype=row["kv_dtype"], attention=row["attention"])
        assert row["seq_len"] == 512 + 128
        assert row["tpot_s"] == pytest.approx(totals(LLAMA2, H100, "decode", sc)["tpot_s"], rel=1e-12)
        prefill = totals(LLAMA2, H100, "prefill", sc.with_(batch=1, seq_len=512))
        assert row["ttft_s"] == pytest.approx(prefill["ttft_s"], rel=1e-12)
        final = totals(LLAMA2, H100, "decode", sc.with_(seq_len=512 + 256 - 1))
        assert row["footprint_bytes"] == final["footprint_bytes"]
        assert row["fits"] == (final["fits"] and prefill["fits"])
        assert row["tokens_per_s"] == pytest.approx(row["batch"] / row["tpot_s"])
        # the expected twins are the estimator's for the same steps (roofline.estimate, vectorized in the search)
        assert row["tpot_expected_s"] == pytest.approx(analyze(LLAMA2, H100, "decode", sc)[1]["tpot_expected_s"],
                                                       rel=1e-9)
        assert row["ttft_expected_s"] == pytest.approx(
            analyze(LLAMA2, H100, "prefill", sc.with_(batch=1, seq_len=512))[1]["ttft_expected_s"], rel=1e-9)
        assert row["estimate"] == "calibrated" and row["framework"] == "trtllm"
    for row in planner.rows(result, planner.frontier(result)):
        assert row["fits"] and row["tpot_expected_s"] <= 0.02  # the targets hold in expectation
    assert not rows[-1]["fits"]  # batch 512 of 768 tokens at fp16: 512 x 768 x 0.5 MB of KV = 201 GB > 80 GB


def test_interleaved_prefill_adds_its_share_to_every_token():
    workload = planner.Workload(isl=512, osl=256, prefill="interleaved")
    result = planner.search(LLAMA2, [H100], workload, dtypes=("fp16",), batches=(1, 64), max_devices=4)
    # every decode step owes batch / osl prefills: TPOT = step + (B / osl) x TTFT
    expected = result.tpot_s + result.batch / 256 * result.ttft_s
    assert np.allclose(result.step_s, expected, rtol=0, atol=0)
    assert np.array_equal(result.tokens_per_s, result.batch / expected)


# The command-line tests below run the previous release's step model (`--prefill`): what they check is its
# behaviour; the serving model's `plan` is tested in tests/test_serving.py.


def test_cli_csv_columns_and_frontier(capsys, monkeypatch):
    # a loaded machine takes past 3 s here, and a progress line ("plan: x% of ...") then joins stderr
    from roofline.serving import search_budget

    monkeypatch.setattr(search_budget, "PROGRESS_AFTER_S", float("inf"))
    code, out, err = run(capsys, "plan", "--prefill", "separate",
                         "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "h200-sxm",
                         "--isl", "1024", "--osl", "1024", "--tpot-ms", "50", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == PLAN_COLUMNS + COST_COLUMNS
    for name in ("model", "gpu", "devices", "tp", "pp", "ep", "batch", "weight_dtype", "kv_dtype", "attention",
                 "ttft_s", "tpot_s", "tokens_per_s", "tokens_per_s_per_device", "tokens_per_s_per_user", "bound",
                 "estimate"):
        assert name in rows[0]
    # ranked on the expected times (the default): best first, each next one faster per user, targets met
    per_device = [float(r["tokens_per_s_per_device_expected"]) for r in rows]
    per_user = [float(r["tokens_per_s_per_user_expected"]) for r in rows]
    assert per_device == sorted(per_device, reverse=True)  # best first
    assert all(a < b for a, b in zip(per_user, per_user[1:]))  # and each next one is faster per user
    assert all(r["fits"] == "True" and float(r["tpot_s"]) <= float(r["tpot_expected_s"]) <= 0.05 for r in rows)
    assert {r["gpu"] for r in rows} <= {"h100-sxm", "h200-sxm"}
    # the first line says what was searched; a second one (--top's default of 20 rows) how many rows were left out
    match = re.fullmatch(r"evaluated (\d+) configurations in ([\d.]+) s \(([\d,]+) per second\)\n"
                         r"(\d+ of \d+ frontier rows shown .*--top 0 every row\n)?", err)
    # 2 devices x 10 plans (tp x pp <= 8 in powers of two: 4 + 3 + 2 + 1; every one divides Llama-3.1-8B's 32
    # heads and 8 KV heads) x 4 weight dtypes x 3 KV dtypes (int4 KV left out) x 2 kernels x the batch grid
    assert match and int(match.group(1)) == 2 * 10 * 4 * 3 * 2 * len(planner.BATCH_GRID)


def test_cli_impossible_target_prints_the_reason(capsys):
    code, out, err = run(capsys, "plan", "--prefill", "separate",
                         "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--isl", "1024",
                         "--osl", "1024", "--tpot-ms", "1", "--format", "csv")
    assert code == 0 and out.strip() == ",".join(PLAN_COLUMNS + COST_COLUMNS)  # header, no rows
    reason = err.splitlines()[-1]
    assert re.fullmatch(r"no plan meets TPOT <= 1 ms: the lowest TPOT any plan that fits reaches is [\d.]+ ms: "
                        r"8 x H100 SXM5 80GB, TP 8 at batch 1, int4 weights, .* bound by memory bandwidth", reason)
    code, out, err = run(capsys, "plan", "--prefill", "separate",
                         "--model", "llama-3.1-70b", "--gpu", "rtx-a6000", "--isl", "1024",
                         "--osl", "1024", "--dtypes", "fp16", "--max-devices", "1")
    # 70.6e9 parameters x 2 bytes = 141 GB of weights alone; usable: 0.9 x 48 GiB = 46.4 GB
    assert code == 0 and out.startswith("no plan fits in memory: the smallest footprint, 141.8 GB per device")
    assert out.rstrip().endswith("on 46.39 GB usable")
    code, out, _ = run(capsys, "plan", "--prefill", "separate",
                         "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--isl", "1024",
                       "--osl", "1024", "--tpot-ms", "1", "--format", "json")
    assert code == 0 and json.loads(out) == []


def test_cli_bad_input_exits_2(capsys):
    code, _, err = run(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxn", "--isl", "8", "--osl", "8")
    assert code == 2 and "did you mean 'h100-sxm'" in err
    code, _, err = run(capsys, "plan", "--model", "llama-3.1-8b", "--isl", "8", "--osl", "8", "--tpot-ms", "-3")
    assert code == 2 and err.startswith("roofline: error: --tpot-ms: -3 is not allowed")


def test_search_speed_is_printed_for_a_large_search(capsys):
    """Two devices, ten plans, the default dtypes: > 100,000 candidates; the command reports its rate (the
    benchmark benchmarks/bench_plan.py measures it on a quiet machine; here only a 10x regression fails)."""
    code, _, err = run(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "h200-sxm", "--isl",
                       "1024", "--osl", "1024", "--tpot-ms", "20", "--format", "csv")
    n, seconds, _ = re.match(r"evaluated (\d+) configurations in ([\d.]+) s \(([\d,]+) per second\)\n",
                             err).groups()  # a second line may say how many frontier rows --top left out
    assert code == 0 and int(n) >= 100_000
    assert int(n) / max(float(seconds), 1e-3) >= 10_000


def test_acceptance_frontier_rows_reevaluate_with_roofline_totals(capsys):
    """The issue's acceptance: Llama-3.1-70B on H100 and H200, 1024 + 1024 tokens, TPOT <= 50 ms: every frontier row
    fits and meets the target, and `roofline totals` with the row's options gives the same TPOT (within 1%) and
    TTFT (prefill of one request)."""
    code, out, _ = run(capsys, "plan", "--prefill", "separate",
                       "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpu", "h200-sxm",
                       "--isl", "1024", "--osl", "1024", "--tpot-ms", "50", "--format", "csv", "--top", "0")  # all
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) > 10
    assert all(r["fits"] == "True" and float(r["tpot_s"]) <= 0.050 for r in rows)
    assert {r["tp"] for r in rows} >= {"1", "2", "4", "8"}  # the frontier spans the tensor-parallel degrees
    for row in rows[:: max(1, len(rows) // 12)] + rows[-1:]:
        options = ["--model", "llama-3.1-70b", "--gpu", row["gpu"], "--tp", row["tp"], "--pp", row["pp"],
                   "--ep", row["ep"], "--weight-dtype", row["weight_dtype"], "--act-dtype", row["act_dtype"],
                   "--kv-dtype", row["kv_dtype"], "--attention", row["attention"], "--format", "json"]
        options += ["--attention-dp"] if row["attention_dp"] == "True" else []
        _, decode, _ = run(capsys, "totals", "--stage", "decode", "--batch", row["batch"], "--seq-len",
                           row["seq_len"], *options)
        assert json.loads(decode)["tpot_s"] == pytest.approx(float(row["tpot_s"]), rel=0.01), row["deployment"]
        # the calibrated estimate of the same step is the engine's too, never below the bound
        assert json.loads(decode)["tpot_expected_s"] == pytest.approx(float(row["tpot_expected_s"]), rel=1e-9)
        assert float(row["tpot_expected_s"]) >= float(row["tpot_s"])
        assert json.loads(decode)["deployment"] == row["deployment"]
        _, prefill, _ = run(capsys, "totals", "--stage", "prefill", "--batch", "1", "--seq-len", row["isl"],
                            *options)
        assert json.loads(prefill)["ttft_s"] == pytest.approx(float(row["ttft_s"]), rel=0.01)
        labels = {json.loads(decode)["estimate"], json.loads(prefill)["estimate"]}
        assert row["estimate"] == (labels.pop() if len(labels) == 1 else "partial")
        assert row["framework"] == json.loads(decode)["framework"] == "trtllm"
        # the fit is the engine's at the end of the request: isl + osl tokens cached
        _, final, _ = run(capsys, "totals", "--stage", "decode", "--batch", row["batch"], "--seq-len",
                          str(int(row["isl"]) + int(row["osl"]) - 1), *options)
        assert json.loads(final)["fits"] and json.loads(final)["footprint_bytes"] == float(row["footprint_bytes"])


def test_reason_names_the_collective_when_the_network_bounds_the_fastest_plan(capsys):
    # Llama-3.1-8B on 32 L40S (PCIe, 4 nodes of 8): at batch 1 with int4 weights each device reads 0.19 GB of
    # weights per step (0.21 ms of memory time at 864 GB/s), while the all-reduces (two per layer, across nodes)
    # take 0.34 ms, mostly latency: the link bounds the step (roofline totals ... --tp 32 --weight-dtype int4
    # --kv-dtype fp8: network_share 0.62). At 8 devices it no longer does since the PCIe latency floor is 4 us
    code, out, _ = run(capsys, "plan", "--prefill", "separate",
                         "--model", "llama-3.1-8b", "--gpu", "l40s", "--isl", "1024", "--osl", "1024",
                       "--tpot-ms", "0.5", "--max-devices", "32")
    assert code == 0
    assert re.fullmatch(r"no plan meets TPOT <= 0.5 ms: the lowest TPOT any plan that fits reaches is [\d.]+ ms: "
                        r"32 x L40S, TP 32 at batch 1, int4 weights, .* bound by the \w+_all_reduce latency\n", out)
