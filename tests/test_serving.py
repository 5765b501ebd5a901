"""The serving model (roofline.serving): step composition, the steady state, capacity, speculation, pools, search.

Exact cases carry their arithmetic in comments; the rest are invariants (bounds below expected, Little's law, the
speculative gain shrinking with the batch) and the acceptance cases of the serving issue.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import roofline
from roofline.engine.analysis import analyze
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.estimate.expected import analyze as expected_analyze
from roofline.serving import aggregated as agg
from roofline.serving import search as served_search
from roofline.serving.capacity import kv_per_request
from roofline.serving.search_rows import rows
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_aggregated, serve_disaggregated
from roofline.serving.speculative import Speculation
from roofline.serving.step_tables import tabulate, tabulate_many
from roofline.serving.steps import GRID_RATIO, Curve, Mix, StepPricer, grid, lookup

H200 = get_accelerator("h200-sxm")
FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")


def test_a_decode_only_step_is_the_engines_decode_step():
    # the four parts of a step with D decodes and no prompt tokens are exactly the engine's decode graph
    model = get_model("llama-3.1-8b")
    scenario = Scenario(batch=16, seq_len=1000, parallel=Parallel(tp=2))
    engine = analyze(model, H200, "decode", scenario)[1]["t_s"]
    priced = StepPricer(model, H200, scenario).price(Mix(decode=16.0, kv_len=1000.0))
    assert float(priced) == pytest.approx(engine, rel=1e-12)


def test_a_prompt_only_step_is_the_engines_prefill():
    model = get_model("llama-3.1-8b")
    scenario = Scenario(batch=1, seq_len=2048)
    engine = analyze(model, H200, "prefill", scenario)[1]["t_s"]
    priced = StepPricer(model, H200, scenario).price(Mix(prefill=2048.0, prompt=2048.0))
    assert float(priced) == pytest.approx(engine, rel=1e-12)


def test_a_mixed_step_reads_the_weights_once():
    # 8 decodes + 8 prompt tokens: every GEMM is memory-bound at 16 tokens, so fusing them saves exactly one read
    # of every weight matrix and norm weight: t(8 decodes) + t(8 prompt tokens) - t(both) = those bytes /
    # bandwidth (attention adds up; the embedding gathers rows per token, so its table is no saving)
    model = get_model("llama-3.1-8b")
    pricer = StepPricer(model, H200, Scenario())
    apart = pricer.price(Mix(decode=8.0, kv_len=512.0)) + pricer.price(Mix(prefill=8.0, prompt=8.0))
    fused = pricer.price(Mix(decode=8.0, kv_len=512.0, prefill=8.0, prompt=8.0))
    ops = build_operators(model, "decode", Scenario().for_model(model), batch=1.0, seq_len=1.0)
    matrices = sum(op.count * op.cost.weight for op in ops if op.op_class != "embedding")
    saved = matrices / H200.bandwidth_bytes_per_s
    assert float(apart - fused) == pytest.approx(saved, rel=0.01)


def test_tables_match_the_exact_price():
    # tabulated parts are exact at grid points and within 0.5% between them (interpolation in log space)
    model = get_model("llama-3.1-70b")
    scenario = FP8.with_(parallel=Parallel(tp=2))
    mix = Mix(kv_len=1536.0, prompt=1024.0)
    parts = tabulate(model, [H200], scenario, mix, tokens=20000, sequences=512)[0]
    pricer = StepPricer(model, H200, scenario)
    for D, P in ((GRID_RATIO ** 40, 0.0), (7.0, 1000.0), (300.0, 4096.0), (0.0, 1024.0)):
        for side in ("bound", "expected"):
            exact = float(pricer.price(Mix(decode=D, kv_len=1536.0, prefill=P, prompt=1024.0), side))
            assert float(parts.time(D, P, side)) == pytest.approx(exact, rel=5e-3)


def test_grid_and_lookup():
    # grid(10) = 1.04^k up to at least 10: ceil(ln 10 / ln 1.04) = 59, plus two points
    assert len(grid(10)) == 61
    table = np.log(grid(100))  # a table linear in log x is read back exactly
    assert lookup(table, 37.0) == pytest.approx(math.log(37.0))
    stacked = np.stack([table, 2 * table])
    assert lookup(stacked, np.array([37.0, 37.0]), np.array([0, 1])) == pytest.approx(
        [math.log(37.0), 2 * math.log(37.0)])


class FlatSteps:
    """A stepper whose decode step takes 10 ms and whose step with prompt tokens takes 30 ms."""

    lone_prompt = 0.02

    def light(self, D, side):
        return 0.010 + 0 * np.asarray(D, dtype=float)

    def heavy(self, D, C, side, chunk=np.inf):
        return 0.030 + 0 * np.asarray(D, dtype=float)

    def light_and_heavy(self, D, prompt_tokens, side, chunk=np.inf):
        return self.light(D, side), [self.heavy(D, C, side, chunk) for C in prompt_tokens]


def test_step_mix_arithmetic():
    # isl 100, osl 11: 10 decode steps per request; 5 requests in flight, 4 decoding, prompts one by one (sync 0)
    load = agg.Load(isl=100, osl=11)
    scheduler = agg.Scheduler(budget=1000, mixed=True)
    times = agg.step_mix(FlatSteps(), load, scheduler, 4.0, 5.0, "expected")
    # each of the other 4 users sends its next 100-token prompt once per cycle, and 4 of the 5 in flight decode
    # (Little: the share of the cycle spent decoding), so 4 x 4/5 = 3.2 prompts land in one request's 10 decode
    # steps: 32 tokens per step in chunks of one prompt (100), so 0.32 of the steps carry one: TPOT = 0.68 x 10 ms +
    # 0.32 x 30 ms = 16.4 ms
    assert float(times["tpot"]) == pytest.approx(0.0164)
    # residual of the running step: E[t^2] / 2 E[t] = (0.68 x 1e-4 + 0.32 x 9e-4) / (2 x 0.0164) = 0.0108537; own
    # prompt 30 ms. The wait for prompt room is the M/D/1 wait at the utilization an arrival sees, 4/5 of the loop's
    # own u = k X (by the arrival theorem it finds the other 4 of the 5 requests): a prompt takes k = 100 tokens x
    # 30 ms / 996 tokens of room = 3.012 ms of full steps; X = 5 / (S + wait) with the rest of a request
    # S = 0.0108537 + 0.030 + 10 x 0.0164 = 0.2048537 s, and wait = v / (1 - v) x 15 ms (half the prompt), v = 0.8 u
    wait = float(times["ttft"]) - 0.0108537 - 0.030
    rate = 5 / (0.2048537 + wait)
    u = 100 * 0.030 / 996 * rate
    v = 0.8 * u
    assert wait == pytest.approx(v / (1 - v) * 0.015, rel=1e-4) and float(times["rho"]) == pytest.approx(u, rel=1e-4)
    assert 0.00092 < wait < 0.00096  # X = 24.30 requests/s, u = 0.0732, v = 0.0586: about 0.94 ms


def test_open_loop_arithmetic():
    # Poisson arrivals at 20/s of isl 100, osl 11 at occupancy 4: the prompt room is 1000 - 4 = 996 tokens and a step
    # carrying prompts takes 30 ms, so a prompt's service is 100 / 996 x 30 ms = 3.012 ms and the utilization
    # u = 20 x 3.012 ms = 0.06024; the M/D/1 wait is u / 2 (1 - u) x 3.012 ms = 0.0965 ms (the old count of
    # requests in flight per step had taken u from the 4 decoding and made the wait a whole 30 ms step's share)
    load = agg.Load(isl=100, osl=11)
    times = agg.step_mix(FlatSteps(), load, agg.Scheduler(budget=1000, mixed=True), 4.0, 5.0, "expected",
                         closed=False, rate=20.0, busy=1.0)
    service = 100 / 996 * 0.030
    u = 20.0 * service
    assert float(times["rho"]) == pytest.approx(u)
    assert float(times["queue"]) == pytest.approx(u / (2 * (1 - u)) * service)


def test_an_open_loop_ttft_grows_with_the_rate_up_to_saturation():
    # the cache holds the requests in the engine, not those queued for prompt room: a queue longer than the cache
    # had turned the rate into a saturated closed loop's without a queue (10 s at 4.945/s, 0.24 s at 4.95/s)
    rates = (2.0, 4.0, 4.9, 4.945, 4.95, 4.97)
    rows = [roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=8192, osl=2, request_rate=r).iloc[0]
            for r in rates]
    ttft = [row["ttft_expected_s"] for row in rows]
    assert all(row["keeps_up"] for row in rows) and ttft == sorted(ttft) and ttft[-1] > 10 * ttft[0]
    past = roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=8192, osl=2, request_rate=5.5).iloc[0]
    assert not past["keeps_up"] and past["requests_per_s_expected"] < 5.5


def test_a_lone_user_never_waits_for_prompt_room_and_a_second_one_adds_throughput():
    # one closed-loop user finds the loop empty (arrival theorem): TTFT = its own prompt's steps and the overhead
    load, scheduler = agg.Load(isl=100, osl=11), agg.Scheduler(budget=1000, mixed=True)
    alone = agg.step_mix(FlatSteps(), load, scheduler, 0.0, 1.0, "expected")
    assert float(alone["ttft"]) == pytest.approx(0.030)  # one heavy step (30 ms), no residual, no queue
    # a few users wait far less than M/D/1's endless arrivals: with prompt-heavy requests (8192/16, one H100) the rate
    # rises with every user (M/D/1 had it fall from 3.10 requests/s at 1 user to 2.75 at 2)
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), Scenario())
    rates = [serve_aggregated(served, Workload(isl=8192, osl=16, concurrency=n))["requests_per_s_expected"]
             for n in (1, 2, 3, 4, 8)]
    assert rates == sorted(rates) and rates[1] > rates[0]


def test_lockstep_users_keep_prompts_out_of_their_decode_steps():
    # sync 1 and 4 users whose prompts all fit one step (4 x 100 <= 996): one group, so no other prompt ever
    # lands in a request's decode steps: TPOT = the decode step
    load = agg.Load(isl=100, osl=11)
    scheduler = agg.Scheduler(budget=1000, mixed=True, sync=1.0)
    times = agg.step_mix(FlatSteps(), load, scheduler, 4.0, 4.0, "expected")
    assert float(times["tpot"]) == pytest.approx(0.010)


def test_closed_loop_obeys_littles_law():
    served = prepare_served(get_model("llama-3.1-8b"), H200, FP8, framework="trtllm")
    row = serve_aggregated(served, Workload(isl=2048, osl=256, concurrency=48))
    in_flight = row["requests_per_s_expected"] * row["e2e_latency_expected_s"]
    assert in_flight == pytest.approx(48, rel=0.01)  # N = X x E2E
    decoding = row["requests_per_s_expected"] * 255 * row["tpot_expected_s"]
    assert row["decode_batch_expected"] == pytest.approx(decoding, rel=0.02)  # D = X x (osl - 1) x TPOT


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("isl,osl,concurrency", [(128, 1024, 1), (1024, 1024, 64), (8192, 256, 32)])
def test_bounds_stay_below_expected(framework, isl, osl, concurrency):
    served = prepare_served(get_model("llama-3.1-70b"), H200, FP8.with_(parallel=Parallel(tp=2)), framework)
    row = serve_aggregated(served, Workload(isl=isl, osl=osl, concurrency=concurrency))
    assert row["ttft_s"] <= row["ttft_expected_s"]
    assert row["tpot_s"] <= row["tpot_expected_s"]
    assert row["tokens_per_s"] >= row["tokens_per_s_expected"]


def test_kv_per_request():
    # Llama-3.1-8B, fp16 cache: 32 layers x 8 KV heads x 128 x (K and V) x 2 bytes = 131072 bytes per token
    scenario = Scenario(kv_dtype="fp16").for_model(get_model("llama-3.1-8b"))
    assert float(kv_per_request(get_model("llama-3.1-8b"), scenario, 1000)) == 1000 * 131072
    # at TP 2 each device holds 4 of the 8 KV heads
    assert float(kv_per_request(get_model("llama-3.1-8b"), scenario.with_(parallel=Parallel(tp=2)), 1000)) == \
        1000 * 65536


def test_acceptance_tokens_per_step():
    # per-token acceptance 0.7, 3 drafts: 1 + 0.7 + 0.49 + 0.343 = 2.533 tokens per verify step
    assert Speculation("eagle", 3, acceptance=0.7).tokens_per_step == pytest.approx(2.533)
    assert Speculation("mtp", 2, accepted_length=2.4).tokens_per_step == 2.4


def test_eagle_speeds_up_a_lone_user_and_less_a_busy_server():
    # the case: Llama-3.1-70B fp8 on one H200, EAGLE K=3, A=0.7
    model = get_model("llama-3.1-70b")

    def per_user(concurrency, spec):
        served = prepare_served(model, H200, FP8.with_(parallel=Parallel(tp=1)), "vllm", spec)
        return serve_aggregated(served, Workload(isl=1024, osl=1024, concurrency=concurrency))[
            "tokens_per_s_per_user_expected"]

    eagle = Speculation("eagle", 3, acceptance=0.7)
    gain_1 = per_user(1, eagle) / per_user(1, Speculation())
    gain_64 = per_user(64, eagle) / per_user(64, Speculation())
    assert gain_1 >= 1.5
    assert gain_64 < gain_1


def test_prefix_hits_cut_ttft():
    served = prepare_served(get_model("llama-3.1-8b"), H200, FP8, "vllm")
    cold = serve_aggregated(served, Workload(isl=8192, osl=256, concurrency=16))
    warm = serve_aggregated(served, Workload(isl=8192, osl=256, concurrency=16, prefix_hit=0.75))
    assert warm["ttft_expected_s"] < cold["ttft_expected_s"]
    assert warm["ttft_s"] < cold["ttft_s"]
    assert warm["kv_capacity_requests"] > cold["kv_capacity_requests"]


def test_disaggregated_pools():
    model = get_model("deepseek-v3")
    decode = FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True))
    served = prepare_served(model, H200, decode, "sglang")
    row = serve_disaggregated(served, Workload(isl=4096, osl=1024, concurrency=128),
                              Disaggregation(2, 1, Parallel(tp=8, ep=8)))
    assert row["devices"] == 24  # 2 prefill workers x 8 + 1 decode worker x 8
    assert row["tokens_per_s_per_device_expected"] == pytest.approx(row["tokens_per_s_expected"] / 24)
    # one prompt's cache: 61 layers x 576 latent elements (512 + 64 rope) x 1 byte (fp8) x 4096 tokens = 143.9 MB;
    # the decode engine holds a request on one attention replica (one device), and 24 devices span three 8-GPU
    # domains: over one 50 GB/s scale-out link, + its 5 us latency = 2.883 ms
    assert row["kv_transfer_s"] == pytest.approx(5e-6 + 61 * 576 * 4096 / 50e9, rel=1e-9)
    assert row["ttft_expected_s"] > row["kv_transfer_s"]
    assert row["deployment"].startswith("prefill: 2 x (8 x H200")
    assert row["limited_by"] == "decode"  # 128 users on one decode engine; two prefill engines for 4096-token prompts


@pytest.mark.parametrize("call,match", [
    (lambda s: serve_aggregated(s, Workload(isl=8192, osl=8192, concurrency=4096)), "do not fit the KV cache"),
    (lambda s: Speculation("eagle", 3, acceptance=1.0).validate(s.model), "--spec-acceptance"),
    (lambda s: Speculation("draft", 3, acceptance=0.5, draft_model=get_model("llama-3.1-405b")).validate(s.model),
     "not smaller"),
    (lambda s: serve_disaggregated(s, Workload(isl=1024, osl=128, concurrency=4),
                                   Disaggregation(4, 4, Parallel(tp=1), max_devices=4)), "more than --max-devices"),
    (lambda s: Workload(isl=1024, osl=128).validate(), "give exactly one"),
])
def test_bad_input_is_one_line(call, match):
    served = prepare_served(get_model("llama-3.1-70b"), H200, FP8.with_(parallel=Parallel(tp=1)), "vllm")
    with pytest.raises(RooflineInputError, match=match) as error:
        call(served)
    assert "\n" not in str(error.value)


def test_search_mode_all_names_both_kinds_of_pools():
    # the case: DeepSeek-V3 on H200 at 4096/1024, plan --mode all
    result = served_search.search(get_model("deepseek-v3"), [H200], served_search.ServedWorkload(4096, 1024),
                                  ["fp8"], ["fp8"], mode="all", concurrencies=[8, 64, 256, 1024])
    found = rows(result, served_search.frontier(result, per_gpu=True))
    modes = {row["mode"] for row in found}
    assert modes == {"aggregated", "disaggregated"}
    assert all(row["deployment"].startswith("prefill:") == (row["mode"] == "disaggregated") for row in found)
    # --mode all keeps one front per mode: the joint front is inside it, merged best first, and its best aggregated
    # plan (354 token/s per device here) is not dropped for the disaggregated ones that beat it (the joint front's
    # best aggregated plan gives 199)
    per_device = result.columns["tokens_per_s_per_device_expected"]
    kinds = np.array([c.mode for c in result.candidates])[result.candidate]
    joint, each = served_search.frontier(result), served_search.frontier(result, per_mode=True)
    assert set(joint) <= set(each) and list(per_device[each]) == sorted(per_device[each], reverse=True)
    best = {mode: max(per_device[i] for i in front if kinds[i] == "aggregated") for mode, front in
            (("joint", joint), ("each", each))}
    assert best["each"] > 1.5 * best["joint"]
    assert best["each"] == max(per_device[i] for i in np.flatnonzero(result.meets("expected")) if kinds[i] ==
                               "aggregated")


def test_search_matches_serve():
    # a candidate of the search is the served row of the same deployment
    model = get_model("llama-3.1-8b")
    workload = served_search.ServedWorkload(1024, 512, framework="trtllm")
    result = served_search.search(model, [H200], workload, ["fp8"], ["fp8"], max_devices=1,
                                  concurrencies=[32])
    i = next(i for i, c in enumerate(result.candidates) if c.scenario.attention == "flash")
    point = int(np.flatnonzero(result.candidate == i)[0])  # the candidate's (one) served point
    served = prepare_served(model, H200, result.candidates[i].scenario, "trtllm")
    row = serve_aggregated(served, Workload(isl=1024, osl=512, concurrency=32))
    for column in ("ttft_expected_s", "tpot_expected_s", "tokens_per_s_expected", "ttft_s", "tpot_s"):
        assert result.columns[column][point] == pytest.approx(row[column], rel=1e-6)


def test_a_search_keeps_the_points_it_serves_and_counts_every_one():
    # DeepSeek-V3 fp8 on up to 8 H200s at 1, 64 and 16384 users: one device cannot hold its weights and 16384
    # requests fit nowhere, so part of the space is evaluated without a served row; len() still counts all of it
    result = served_search.search(get_model("deepseek-v3"), [H200], served_search.ServedWorkload(4096, 1024),
                                  ["fp8"], ["fp8"], concurrencies=[1, 64, 16384])
    assert len(result) == len(result.candidates) * 3
    assert 0 < len(result.concurrency) < len(result)
    assert result.columns["fits"].all()
    assert (result.concurrency <= result.columns["kv_capacity_requests"]).all()
    assert all(len(column) == len(result.concurrency) for column in result.columns.values())
    assert np.all(np.diff(result.candidate) >= 0)  # candidate by candidate


# ---- the command line and the Python API

def serve_cli(capsys, *argv):
    from roofline.cli import app

    code = app.main(["serve", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_serve_csv_is_one_row_of_the_documented_columns(capsys):
    import csv
    import io

    from roofline.engine.columns import SERVE_COLUMNS

    code, out, _ = serve_cli(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                             "--concurrency", "16", "--framework", "trtllm", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 1 and tuple(rows[0]) == SERVE_COLUMNS
    assert rows[0]["framework"] == "trtllm" and rows[0]["mode"] == "aggregated"


def test_the_api_serves_what_the_command_does(capsys):
    import io

    import pandas as pd

    import roofline

    api = roofline.serve("llama-3.1-70b", "h200-sxm", isl=2048, osl=512, concurrency=32, tp=2, weight_dtype="fp8",
                         spec_method="eagle", spec_accepted_length=2.2)
    code, out, _ = serve_cli(capsys, "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--isl", "2048", "--osl", "512",
                             "--concurrency", "32", "--tp", "2", "--weight-dtype", "fp8", "--spec-method", "eagle",
                             "--spec-accepted-length", "2.2", "--format", "csv")
    command = pd.read_csv(io.StringIO(out), keep_default_na=False, na_values=["nan"])
    assert code == 0 and list(api.columns) == list(command.columns)
    assert api["tpot_expected_s"][0] == pytest.approx(command["tpot_expected_s"][0])
    assert api["accepted_tokens_per_step"][0] == 2.2


@pytest.mark.parametrize("argv,match", [
    (["--spec-method", "eagle", "--spec-acceptance", "1.0"], "--spec-acceptance: 1.0 is not allowed"),
    (["--spec-method", "draft", "--spec-acceptance", "0.5", "--spec-draft-model", "llama-3.1-405b"], "not smaller"),
    (["--concurrency", "5000"], "do not fit the KV cache"),
    (["--mode", "disaggregated", "--prefill-workers", "8", "--decode-workers", "8", "--max-devices", "8"],
     "more than --max-devices 8"),
    (["--prefill-workers", "2"], "--prefill-workers: only with --mode disaggregated"),
    # the default's own value too: a user who forgot --mode disaggregated had got an aggregated row without a word
    (["--decode-workers", "1"], "--decode-workers: only with --mode disaggregated"),
])
def test_serve_bad_input_is_one_line_exit_2(capsys, argv, match):
    base = ["--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--tp", "1", "--weight-dtype", "fp8", "--isl", "4096",
            "--osl", "4096"]
    if "--concurrency" not in argv:
        base += ["--concurrency", "8"]
    code, out, err = serve_cli(capsys, *base, *argv)
    assert code == 2 and out == "" and match in err and err.count("\n") == 1


def test_plan_refuses_prefill_with_mode(capsys):
    from roofline.cli import app

    code = app.main(["plan", "--model", "llama-3.1-8b", "--isl", "512", "--osl", "256", "--prefill", "interleaved",
                     "--mode", "aggregated"])
    _, err = capsys.readouterr()
    assert code == 2 and "--prefill: not with --mode" in err


def test_serving_section_resolves_and_refuses_unknown_keys():
    from roofline.pipeline.serving_section import resolve_serving_section

    models, gpus = {"llama-3.1-8b": get_model("llama-3.1-8b")}, {"h100-sxm": get_accelerator("h100-sxm")}
    settings = resolve_serving_section({"framework": "sglang", "workloads": [
        {"isl": 1024, "osl": 256, "concurrency": [1, 8]}, {"isl": 512, "osl": 128, "request_rate": [2.0]}]},
        gpus, models)
    assert settings.gpus == ("h100-sxm",) and settings.workloads[0].framework == "sglang"
    assert len(settings.workloads[0].loads()) == 2
    with pytest.raises(RooflineInputError, match=r"serving.workloads\[0\]: unknown"):
        resolve_serving_section({"workloads": [{"isl": 1024, "osl": 256, "concurency": [1]}]}, gpus, models)


def test_a_prefill_first_scheduler_keeps_its_users_in_one_lockstep_wave():
    # SGLang-like (prefill steps pause decoding), sync 1, 4 users of 100-token prompts, budget 100: the wave is all
    # 4 users; its prompts take 4 prefill steps of 30 ms, then all decode together (10 steps of 10 ms).
    load = agg.Load(isl=100, osl=11)
    scheduler = agg.Scheduler(budget=100, mixed=False, sync=1.0)
    times = agg.step_mix(FlatSteps(), load, scheduler, 4.0, 4.0, "expected")
    # TTFT: the i-th prompt's first token after i prefill steps, (4 + 1) / 2 x 30 ms = 75 ms on average; the wave
    # arrives as its last step ends and no other group is in flight, so no residual step and no queue
    assert float(times["ttft"]) == pytest.approx(0.075)
    # TPOT: after its first token a request waits out the wave's other prefill steps, (4 - 1) / 2 x 30 ms = 45 ms
    # on average, over its 10 decode steps: 10 ms + 4.5 ms
    assert float(times["tpot"]) == pytest.approx(0.0145)
    # one wave's cycle is 4 x 30 + 10 x 10 = 220 ms = TTFT + (osl - 1) x TPOT = 75 + 145 ms
    assert float(times["ttft"] + 10 * times["tpot"]) == pytest.approx(0.220)


@pytest.mark.parametrize("users,isl,budget,prefill_steps", [(4, 100, 100, 4), (8, 100, 300, 3), (4, 400, 100, 16),
                                                            (1, 400, 100, 4)])
def test_a_lockstep_wave_closes_its_cycle(users, isl, budget, prefill_steps):
    # a prefill-first scheduler, sync 1: the wave's n prefill steps (ceil(users x isl / budget), 30 ms each) then
    # 10 decode steps of 10 ms with every user in them. Requests/s = users / (n x 30 ms + 100 ms), the decode
    # occupancy is every user, and TTFT + 10 TPOT is the cycle, whether a step holds whole prompts or a prompt spans
    # steps (4 x 400 tokens over budget 100: the k-th prompt's first token after step 4k, TTFT (4+8+12+16)/4 = 10
    # steps = 300 ms, TPOT 10 ms + 6 x 30 ms / 10 = 28 ms; 300 + 280 = 580 ms = 16 x 30 + 100)
    load = agg.Load(isl=isl, osl=11)
    out = agg.closed_loop(FlatSteps(), load, agg.Scheduler(budget=budget, mixed=False, sync=1.0), users, 1e9,
                          "expected")
    cycle = prefill_steps * 0.030 + 10 * 0.010
    assert float(out["requests_per_s"]) == pytest.approx(users / cycle, rel=1e-6)
    assert float(out["decode"]) == pytest.approx(users, rel=1e-6)
    assert float(out["e2e"]) == pytest.approx(cycle, rel=1e-6)


def test_independent_arrivals_wait_for_the_running_step():
    # open loop (Poisson): whatever the load, an arrival finds a step running and queued prompts, so TTFT keeps the
    # residual step and the M/D/1 wait that a closed-loop group arriving as its last step ends does not have
    load = agg.Load(isl=100, osl=11)
    scheduler = agg.Scheduler(budget=1000, mixed=True)
    alone = agg.step_mix(FlatSteps(), load, scheduler, 0.4, 1.4, "expected", closed=False)
    looped = agg.step_mix(FlatSteps(), load, scheduler, 0.4, 1.4, "expected")
    assert float(alone["ttft"]) > float(looped["ttft"]) > 0.030


def test_a_lone_user_waits_for_no_running_step():
    # one closed-loop user sends its next request as its last one ends: nothing else runs, so TTFT is its prefill
    load = agg.Load(isl=100, osl=11)
    for mixed in (True, False):
        times = agg.step_mix(FlatSteps(), load, agg.Scheduler(budget=1000, mixed=mixed), 1.0, 1.0, "expected")
        assert float(times["ttft"]) == pytest.approx(0.030)


class CuspSteps(FlatSteps):
    """FlatSteps whose step with prompt tokens takes 300 ms from occupancy `cusp` up: the closed loop's Little's
    count f(D) jumps down across the diagonal there (no fixed point)."""

    def __init__(self, cusp: float):
        self.cusp = cusp

    def heavy(self, D, C, side, chunk=np.inf):
        return np.where(np.asarray(D, dtype=float) < self.cusp, 0.030, 0.300)


def test_closed_loop_converges_and_bisects_a_cusp():
    load, scheduler, users = agg.Load(isl=100, osl=11), agg.Scheduler(budget=1000, mixed=True), 5.0

    def little(steps, D):  # f(D): the requests decoding at occupancy D, by Little's law
        times = agg.step_mix(steps, load, scheduler, D, users, "expected")
        return users * 10 * times["tpot"] / (times["ttft"] + 10 * times["tpot"])

    # flat steps (f moves with D only through the prompt room): the iteration stops on the fixed point D = f(D)
    D = float(agg.closed_loop(FlatSteps(), load, scheduler, users, 1e9, "expected")["decode"])
    assert float(little(FlatSteps(), D)) == pytest.approx(D, rel=1e-7)
    # a cusp between f's two branches (each moves with D a little: the others' prompts a request's decode steps
    # see grow with the decoding share D / users): the cusp sits midway between the branches at the cusp itself,
    # so f jumps across the diagonal there; the iteration bisects onto it
    cusp = 1.0
    for _ in range(50):
        low, high = float(little(CuspSteps(1e9), cusp)), float(little(CuspSteps(0.0), cusp))
        cusp = (low + high) / 2
    assert high < cusp < low  # the dearer prompt step makes requests spend longer outside decoding
    out = agg.closed_loop(CuspSteps(cusp), load, scheduler, users, 1e9, "expected")
    assert float(out["decode"]) == pytest.approx(cusp, rel=1e-4)


def test_closed_loop_broadcasts_stacked_steps_against_the_load():
    # two deployments' stacked tables read per point (rows 0, 1, 0) under one scalar concurrency, and a column of
    # rows against a row of concurrencies: each point is solved as if alone
    model = get_model("llama-3.1-8b")
    plans = [Scenario(parallel=Parallel(tp=tp)).for_model(model) for tp in (1, 2)]
    tables = tabulate_many(model, {s: [H200] for s in plans}, Mix(kv_len=1536.0, prompt=1024.0), 4096.0, 256.0)
    steps = agg.Stepper(target=tables.parts, mixed=True)
    load, scheduler = agg.Load(1024, 1024), agg.Scheduler(budget=8192.0, mixed=True)
    alone = [agg.closed_loop(agg.Stepper(target=tables.of(s, H200.key), mixed=True), load, scheduler, N, 100.0,
                             "expected")["tpot"] for s in plans for N in (8.0, 16.0)]
    rows = agg.closed_loop(steps.at_points(np.array([0, 1, 0])), load, scheduler, 16.0, 100.0, "expected")
    np.testing.assert_allclose(rows["tpot"], [alone[1], alone[3], alone[1]], rtol=1e-6)
    grid2 = agg.closed_loop(steps.at_points(np.array([[0], [1]])), load, scheduler, np.array([8.0, 16.0]), 100.0,
                            "expected")
    assert grid2["tpot"].shape == (2, 2)
    np.testing.assert_allclose(grid2["tpot"].ravel(), alone, rtol=1e-6)


def test_a_curve_reads_what_lookup_reads_bit_for_bit():
    # stacked [3, 6] tables, points below the grid, between nodes, on nodes and past the end, each in its own row
    table = np.arange(18, dtype=float).reshape(3, 6) ** 1.5
    x = np.array([0.5, 1.0, 1.02, GRID_RATIO ** 2, 1.1, 1.2, 50.0])
    group = np.array([0, 1, 2, 0, 1, 2, 1])
    curve = Curve(table)
    assert np.array_equal(curve.at(*curve.locate(x, curve.offsets(group))), lookup(table, x, group))
    one = Curve(table[1])
    assert np.array_equal(one.at(*one.locate(x)), lookup(table[1], x))


def test_prompt_heavy_closed_loops_stay_within_the_prefill_compute():
    # Llama-3.1-8B fp8 on one H200 (TensorRT-LLM), 2048/128 at 800 users: prompts queue, so every step packs its
    # room with prompt tokens. The rate is at most what full prefill steps compute: 4 prompts of 2048 tokens (the
    # 8192-token budget) take t4 = the expected prefill of batch 4, so at most 4 / t4 requests/s (~36). A heavy step
    # priced with one prompt while the cap assumed a full room let 72.8 requests/s through, twice the device's compute.
    model, gpu = get_model("llama-3.1-8b"), H200
    scenario = FP8.with_(framework="trtllm", batch=4, seq_len=2048)
    t4 = expected_analyze(model, gpu, "prefill", scenario)[1]["ttft_expected_s"]
    served = prepare_served(model, gpu, FP8, framework="trtllm")
    row = serve_aggregated(served, Workload(isl=2048, osl=128, concurrency=800))
    assert row["requests_per_s_expected"] <= 4 / t4
    assert row["requests_per_s_expected"] > 0.6 * 4 / t4  # and near it: the prompts are what limits


def test_plan_mode_all_shows_the_best_of_each_mode(capsys):
    # the command as typed (the default --top): aggregated plans rank first here, and --top keeps the best
    # N of each mode, so the disaggregated ones are shown too, each naming its pools
    import csv
    import io

    from roofline.cli.app import main
    from roofline.cli.plan import _top

    assert main(["plan", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--isl", "4096", "--osl", "1024",
                 "--mode", "all", "--format", "csv"]) == 0
    out = capsys.readouterr()
    shown = list(csv.DictReader(io.StringIO(out.out)))
    assert {row["mode"] for row in shown} == {"aggregated", "disaggregated"}
    assert all(row["deployment"].startswith("prefill:") == (row["mode"] == "disaggregated") for row in shown)
    assert "N of each mode" in out.err
    rows = [{"mode": mode, "n": n} for n, mode in enumerate("aaabab")]
    assert _top(rows, 2, per_mode=True) == ([rows[0], rows[1], rows[3], rows[5]], 2)
    assert _top(rows, 2) == (rows[:2], 4) and _top(rows, 0, per_mode=True) == (rows, 0)


@pytest.mark.parametrize("extra", [dict(concurrency=32), dict(request_rate=0.5),
                                   dict(concurrency=16, mode="disaggregated", prefill_workers=1, decode_workers=1)])
def test_every_served_quantity_has_its_bound_beside_it(extra):
    # e2e latency and requests/s and tokens/s per user: the bound, then the expected value on its right side
    import roofline

    row = roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256, **extra).iloc[0]
    assert row["e2e_latency_s"] == pytest.approx(row["ttft_s"] + 255 * row["tpot_s"], rel=1e-12)
    assert row["tokens_per_s_per_user"] == pytest.approx(1 / row["tpot_s"], rel=1e-12)
    assert row["requests_per_s"] == pytest.approx(row["tokens_per_s"] / 256, rel=1e-12)
    assert 0 < row["e2e_latency_s"] <= row["e2e_latency_expected_s"]
    assert row["tokens_per_s_per_user"] >= row["tokens_per_s_per_user_expected"] > 0
    assert row["requests_per_s"] >= row["requests_per_s_expected"] > 0


def test_serve_says_when_an_open_loop_overloads_the_deployment(capsys):
    from roofline.cli.app import main

    args = ["serve", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
            "--isl", "4096", "--osl", "512", "--format", "json"]
    assert main([*args, "--request-rate", "20"]) == 0
    out = capsys.readouterr()
    row = json.loads(out.out)
    row = row[0] if isinstance(row, list) else row
    assert row["keeps_up"] is False and row["ttft_expected_s"] is None  # infinite: JSON null
    assert len(out.err.strip().splitlines()) == 1 and "--request-rate 20" in out.err and "infinite" in out.err
    assert main([*args, "--request-rate", "0.1"]) == 0 and capsys.readouterr().err == ""


def test_dtype_lists_take_commas_as_well_as_spaces(capsys):
    import csv
    import io

    from roofline.cli.app import main

    base = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
            "--max-devices", "1", "--kv-dtypes", "fp8", "--top", "0", "--format", "csv"]
    found = []
    for words in (["fp8,int4"], ["fp8", "int4"], ["fp8,", "int4"]):
        assert main([*base, "--weight-dtypes", *words]) == 0
        found.append({row["weight_dtype"] for row in csv.DictReader(io.StringIO(capsys.readouterr().out))})
    assert found[0] == found[1] == found[2] == {"fp8", "int4"}
    assert main([*base, "--weight-dtypes", "fp8,nvfp5"]) == 2
    assert "--weight-dtypes: unknown value 'nvfp5'" in capsys.readouterr().err


def test_tensorrt_llm_is_refused_off_nvidia_gpus_and_left_out_of_a_whole_catalog_search(capsys):
    # a new user's sweep: `serve --framework trtllm --gpu mi300x` (and TPUs, Gaudi) ran without a word under a
    # framework that runs on NVIDIA GPUs only
    import io

    import pandas as pd

    from roofline.cli import app

    code, out, err = serve_cli(capsys, "--model", "llama-3.1-8b", "--gpu", "mi300x", "--framework", "trtllm",
                               "--isl", "1024", "--osl", "256", "--concurrency", "4")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--framework: trtllm runs on NVIDIA GPUs only, and mi300x is AMD's; choose vllm or sglang" in err
    assert app.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "tpu-v5e", "--framework",
                     "trtllm", "--isl", "1024", "--osl", "256"]) == 2
    assert "tpu-v5e is Google's" in capsys.readouterr().err
    # the whole catalog under trtllm: its NVIDIA devices only
    assert app.main(["plan", "--model", "llama-3.1-8b", "--framework", "trtllm", "--isl", "1024", "--osl", "256",
                     "--max-devices", "1", "--top", "0", "--format", "csv"]) == 0
    found = pd.read_csv(io.StringIO(capsys.readouterr().out))
    vendors = {get_accelerator(key).vendor for key in found.gpu}
    assert vendors == {"NVIDIA"}
    # the step model's commands too: TensorRT-LLM's kernel tables on an AMD GPU had answered "calibration none"
    for command in ("totals", "ops"):
        assert app.main([command, "--model", "llama-3.1-8b", "--gpu", "mi300x", "--stage", "decode",
                         "--framework", "trtllm"]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err == ("roofline: error: --framework: trtllm runs on NVIDIA GPUs "
                                                       "only, and mi300x is AMD's; choose vllm or sglang for it\n")
    assert app.main(["totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode",
                     "--framework", "trtllm"]) == 0
    assert "h100-sxm.trtllm" in capsys.readouterr().out
