"""Findings of a randomized sweep of `roofline serve` and `roofline plan` (43,000 serve calls, 45 searches over
every catalog model and 23 devices), each a test that failed before its fix."""
from __future__ import annotations

import numpy as np
import pytest

import roofline
from roofline.cli import app as cli
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.serving import disaggregated as dis
from roofline.serving import search as served_search
from roofline.serving.groups import step_yield
from roofline.serving.search import ServedWorkload
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_disaggregated
from roofline.serving.step_tables import tabulate_many
from roofline.serving.steps import Mix

FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")


def _error(capsys, *argv) -> str:
    """The one error line of `roofline ARGV` (exit status 2)."""
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_device_without_links_leaves_the_disaggregated_search_to_the_others():
    # m1-max links to no other device (scale-up domain 1, no network), and is in the default --gpu list: a
    # disaggregated search over it and an H100 failed whole on its hand-over link ("has no link for 2 devices")
    model, load = get_model("llama-3.1-8b"), ServedWorkload(isl=128, osl=128)
    m1, h100 = get_accelerator("m1-max"), get_accelerator("h100-sxm")
    assert m1.reach == 1 and h100.reach == float("inf")
    result = served_search.search(model, [m1, h100], load, ["fp8"], ["fp8"], 2, "disaggregated")
    assert len(result) and {c.gpu.key for c in result.candidates} == {"h100-sxm"}
    # the budget check counts what the search evaluates (the unlinked device's layouts left out of both)
    assert served_search.count_candidates(model, [m1, h100], ["fp8"], ["fp8"], 2, "disaggregated") == len(result)
    with pytest.raises(roofline.RooflineInputError, match="links to another device.*--mode aggregated"):
        served_search.search(model, [m1], load, ["fp16"], ["fp16"], 2, "disaggregated")


def test_the_token_compute_roof_takes_balanced_routing_whatever_the_grid():
    # Parts.token_compute_bound was read at the last token of the caller's grid, with the busiest expert group's
    # expected spread: `serve` (grid to its cache's capacity) and `plan` (grid to the search's largest batch)
    # bounded one disaggregated deployment 0.1-0.3% apart. Under balanced routing an expert group of EP 2 computes
    # half the pairs at the full width, the same FLOPs per device as TP 2 at half the width of every pair (the
    # weighted combine sums its rows apart: 0.004% here; the spread of 8,192 pairs over 2 groups was 1.3% of the
    # experts' FLOPs)
    model, h200 = get_model("mixtral-8x7b"), get_accelerator("h200-sxm")
    plans = [FP8.with_(parallel=Parallel(tp=2, ep=ep)) for ep in (1, 2)]
    mix = Mix(kv_len=1536.0, prompt=1024.0)
    roofs = [[tabulate_many(model, {s: [h200]}, mix, tokens, 256.0).of(s.for_model(model), "h200-sxm")
              .token_compute_bound for s in plans] for tokens in (4096.0, 65536.0)]
    assert roofs[0] == roofs[1]  # the grid does not matter
    assert roofs[0][1] == pytest.approx(roofs[0][0], rel=1e-4)  # EP 2 balanced = TP 2


def test_a_disaggregated_closed_loop_completes_no_more_than_its_users_over_their_cycle():
    # one user over two decode workers: D ~ 0.004 per worker, below the bisection's step over [0, running]
    # (running / 2^24), so the rate came out 1.6% above 1 / e2e
    rates = []
    for workers in (1, 2, 4):
        row = roofline.serve("llama-2-7b", "b300", isl=1, osl=2, concurrency=1, mode="disaggregated",
                             prefill_workers=1, decode_workers=workers, kv_dtype="fp8", weight_dtype="int4").iloc[0]
        assert row.requests_per_s_expected * row.e2e_latency_expected_s <= 1 + 1e-9
        rates.append(row.requests_per_s_expected)
    # the bisection's bracket ends at the users' share per worker: one user is served alike by 1, 2 or 4 decode
    # workers (their lone-sequence steps; 4.511 / 4.547 / 4.475 requests/s before)
    assert max(rates) / min(rates) - 1 < 1e-6


def test_an_overloaded_open_loop_fits_alike_in_both_modes():
    rows = [roofline.serve("llama-3.1-8b", "h200-sxm", isl=1024, osl=1024, request_rate=50.0, **kw).iloc[0]
            for kw in ({}, {"mode": "disaggregated", "prefill_workers": 1, "decode_workers": 1})]
    assert [(bool(r.fits), bool(r.keeps_up)) for r in rows] == [(True, False), (True, False)]
    # the saturated closed loop's requests in flight, rate x cycle, came out at 233.00000000000003 of 233 (a
    # review's case): at most the users it serves
    row = roofline.serve("llama-2-7b", "h100-sxm", isl=1070, osl=142, kv_dtype="fp8", weight_dtype="fp8",
                         request_rate=1000.0, mode="disaggregated").iloc[0]
    assert bool(row.fits) and not bool(row.keeps_up)


def test_a_verify_step_yields_no_more_tokens_than_the_request_has_left():
    # osl 2: one token after the first; accepted length 5 priced it at a fifth of a verify step (e2e below no
    # speculation)
    plain = roofline.serve("llama-3.1-8b", "h200-sxm", isl=1024, osl=2, concurrency=1).iloc[0]
    drafted = roofline.serve("llama-3.1-8b", "h200-sxm", isl=1024, osl=2, concurrency=1, spec_method="ngram",
                             spec_tokens=4, spec_accepted_length=5.0).iloc[0]
    assert drafted.accepted_tokens_per_step == 1.0
    assert drafted.tpot_expected_s >= plain.tpot_expected_s  # a verify step of 5 queries, one token out of it
    long = roofline.serve("llama-3.1-8b", "h200-sxm", isl=1024, osl=511, concurrency=1, spec_method="ngram",
                          spec_tokens=4, spec_accepted_length=5.0).iloc[0]
    assert long.accepted_tokens_per_step == 5.0
    assert step_yield(5.0, 2) == 1.0 and step_yield(5.0, 4) == 3.0 and step_yield(2.533, 1024) == 2.533


def test_the_prefill_worker_stops_iterating_once_converged():
    # the fixed point of a prefill worker's step (C = arrivals x c x t(C)) now leaves its loop once it moves less
    # than TOLERANCE: the same state as all iterations (the search's disaggregated solve ran 5x faster)
    served = prepare_served(get_model("llama-3.1-70b"), get_accelerator("h200-sxm"),
                            FP8.with_(parallel=Parallel(tp=2)))
    load = Workload(isl=4096, osl=256, concurrency=64).load(served.spec)
    prefill = served.stepper(load, 64.0).prompts_alone()
    arrivals = np.array([0.1, 2.0, 20.0, 60.0])
    saturation = dis.saturation_rate(prefill, load, 8192.0, "expected")
    quick = dis._prefill_worker(prefill, load, 8192.0, arrivals, saturation, "expected")
    import roofline.serving.disaggregated as module
    tolerance, module.TOLERANCE = module.TOLERANCE, 0.0
    try:
        full = dis._prefill_worker(prefill, load, 8192.0, arrivals, saturation, "expected")
    finally:
        module.TOLERANCE = tolerance
    for a, b in zip(quick, full):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    pools = Disaggregation(1, 2, Parallel(tp=2))
    row = serve_disaggregated(served, Workload(isl=4096, osl=256, concurrency=64), pools)
    assert row["requests_per_s_expected"] * row["e2e_latency_expected_s"] <= 64 * (1 + 1e-9)


def test_an_unknown_option_is_matched_against_its_own_command(capsys):
    # the suggestion and the list came from every command (`--bogus` -> "did you mean '--out'?", which serve then
    # refused as another command's option)
    err = _error(capsys, "serve", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1", "--osl", "2",
                 "--concurrency", "1", "--bogus")
    assert "allowed with serve: " in err and "--concurrency" in err
    assert "--top" not in err and "--out" not in err and "--stage" not in err
    assert "did you mean" not in err  # matched without the dashes every option shares: nothing is close to "bogus"
    # before the command: the top parser's own options
    err = _error(capsys, "--bogus", "serve", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1", "--osl",
                 "2", "--concurrency", "1")
    assert err.endswith("unrecognized option '--bogus'; allowed: --help, --version\n")
    for typo, meant in (("--conc", "--concurrency"), ("--prefil-tp", "--prefill-tp"),
                        ("--concurency", "--concurrency")):
        err = _error(capsys, "serve", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1", "--osl", "2",
                     "--concurrency", "1", typo)
        assert f"unrecognized option '{typo}' (did you mean '{meant}'?)" in err


def test_refusals_name_the_fix_that_applies(capsys):
    base = ("serve", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1", "--osl", "2", "--concurrency", "1")
    # a dense model under attention DP with ep 1 was told "use ep 1"
    assert "is dense (drop attention_dp)" in _error(capsys, *base, "--attention-dp")
    # balancing where no replica exists changed nothing while the row showed it on; disaggregated, only the
    # prefill pool computes prompts (the decode pool's attention DP has none to balance)
    assert "--attention-dp-balance: " in _error(capsys, *base, "--framework", "trtllm", "--attention-dp-balance")
    moe = ("serve", "--model", "qwen3-30b-a3b", "--gpu", "h200-sxm", "--framework", "trtllm", "--tp", "2", "--ep",
           "2", "--isl", "1024", "--osl", "128", "--concurrency", "8", "--mode", "disaggregated",
           "--attention-dp-balance")
    assert "--attention-dp-balance: " in _error(capsys, *moe, "--attention-dp")
    assert cli.main([*moe, "--prefill-attention-dp", "--prefill-tp", "2", "--prefill-ep", "2", "--format", "csv"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(',"50,10",off,0')  # attention_dp_balance, batch_wait, max_running
    # weights that alone overflow the device: no KV-cache dtype can help
    err = _error(capsys, "serve", "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--tp", "1", "--isl", "1024",
                 "--osl", "1024", "--concurrency", "8")
    assert "weights alone exceed" in err and "KV cache dtype" not in err and "fp8 KV cache" not in err
    # pools on a device linked to no other: said as the pools' hand-over (was "has no link for 2 devices ... give
    # scaleup_gbps/scaleup_domain/scaleout_gbps", catalog fields, not options)
    err = _error(capsys, "serve", "--model", "llama-3.1-8b", "--gpu", "m1-max", "--isl", "128", "--osl", "128",
                 "--concurrency", "1", "--mode", "disaggregated")
    assert "--mode disaggregated: 2 devices of m1-max cannot hand caches over" in err and "--mode aggregated" in err
    # one device that cannot run the model at all: its own reason, not "computes at the dtypes asked or holds"
    err = _error(capsys, "plan", "--model", "glm-5", "--gpu", "a100-sxm-80gb", "--isl", "1024", "--osl", "1024")
    assert "sparse-attention indexer computes in fp8" in err


def test_a_plan_row_shows_the_balancing_only_where_it_acts(capsys):
    # every row showed --attention-dp-balance's 50,10, plans without attention-DP replicas too (where it changes
    # nothing, as `serve` now refuses)
    import csv
    import io

    assert cli.main(["plan", "--model", "qwen3-30b-a3b", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "1024",
                     "--framework", "trtllm", "--attention-dp-balance", "--max-devices", "2", "--top", "0",
                     "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    shown = {(row["attention_dp"], row["attention_dp_balance"]) for row in rows}
    assert shown == {("True", "50,10"), ("False", "off")}


def test_weight_options_that_would_change_nothing_are_refused(capsys):
    # they were accepted and shown in the row while the price stayed the same
    base = ("serve", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1", "--osl", "2", "--concurrency", "1")
    assert "--expert-weight-dtype: llama-3.1-8b is dense" in _error(capsys, *base, "--expert-weight-dtype", "fp8")
    err = _error(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--stage", "decode",
                 "--weight-group-size", "64")
    assert "--weight-group-size: groups int4 weights" in err and "these are fp16" in err
    # where some weights are int4 (the experts alone, too) it applies
    assert cli.main([*base, "--weight-dtype", "int4", "--weight-group-size", "64", "--format", "csv"]) == 0
    assert cli.main(["totals", "--model", "mixtral-8x7b", "--gpu", "h200-sxm", "--stage", "decode",
                     "--expert-weight-dtype", "int4", "--weight-group-size", "64"]) == 0
    capsys.readouterr()
