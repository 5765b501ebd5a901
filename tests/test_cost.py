"""Cost per million tokens and energy per token (roofline.engine.cost): the arithmetic, the totals and plan rows,
ranking on cost, the config keys and the one-line errors."""
import csv
import io
import math

import jsonschema
import pytest

from roofline.cli import app as cli
from roofline.engine import hardware
from roofline.engine.columns import COST_COLUMNS
from roofline.engine.cost import ENERGY_MEASURED, ENERGY_TDP, cost_per_million_tokens, energy_per_token_j
from roofline.engine.errors import RooflineInputError
from roofline.pipeline import config as rc
from roofline.pipeline.schema_messages import describe_schema_error
from test_plan_workflow import SCHEMA


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def csv_rows(capsys, *argv) -> list[dict]:
    code, out, err = run(capsys, *argv, "--format", "csv")
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


def test_cost_and_energy_arithmetic():
    # 2 devices x 3 USD/h = 6 USD/h = 1/600 USD/s; at 1000 token/s a million tokens take 1000 s: 1000/600 USD
    assert cost_per_million_tokens(3.0, 2, 1000.0) == pytest.approx(1000 / 600, rel=1e-15)
    # 2 devices x 700 W = 1400 J/s over 1000 token/s = 1.4 J per token
    assert energy_per_token_j(700.0, 2, 1000.0) == pytest.approx(1.4, rel=1e-15)
    for value in (cost_per_million_tokens(None, 1, 10.0), cost_per_million_tokens(1.0, 1, 0.0),
                  energy_per_token_j(None, 1, 10.0), energy_per_token_j(1.0, 1, math.nan)):
        assert math.isnan(value)  # no price, no power or no throughput: no figure


def test_catalog_reads_tdp_and_ships_no_price():
    catalog = hardware.catalog()
    assert catalog["h100-sxm"].tdp_w == 700 and catalog["l4"].tdp_w == 72
    assert catalog["tpu-v5e"].tdp_w is None  # not published: no energy
    assert all(gpu.price_per_hour is None and gpu.power_w is None for gpu in catalog.values())


def test_totals_cost_from_the_bound_and_the_expected_throughput(capsys):
    (row,) = csv_rows(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode",
                      "--batch", "8", "--price-per-hour", "2.5")
    devices, bound, expected = int(row["devices"]), float(row["tokens_per_s"]), float(row["tokens_per_s_expected"])
    # USD per million tokens = 2.5 USD/h x devices / 3600 s/h / (token/s) x 1e6
    assert float(row["cost_per_million_tokens"]) == pytest.approx(2.5 * devices / 3600 / bound * 1e6, rel=1e-12)
    assert float(row["cost_per_million_tokens_expected"]) == pytest.approx(2.5 * devices / 3600 / expected * 1e6,
                                                                           rel=1e-12)
    # the bound is the fastest: its cost is the lower one
    assert float(row["cost_per_million_tokens"]) < float(row["cost_per_million_tokens_expected"])
    # energy: 700 W x the expected time of one token (tpot_expected / batch)
    assert float(row["energy_per_token_j"]) == pytest.approx(700 * float(row["tpot_expected_s"]) / 8, rel=1e-12)
    assert row["energy_basis"] == ENERGY_TDP


def test_prefill_rows_count_prompt_tokens(capsys):
    (row,) = csv_rows(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "prefill",
                      "--seq-len", "1000", "--price-per-hour", "3.6")
    # 3.6 USD/h = 1e-3 USD/s; 1000 prompt tokens in ttft_s seconds: 1e-3 x ttft_s / 1000 x 1e6 = ttft_s USD
    assert float(row["cost_per_million_tokens"]) == pytest.approx(float(row["ttft_s"]), rel=1e-12)
    assert float(row["energy_per_token_j"]) == pytest.approx(700 * float(row["ttft_expected_s"]) / 1000, rel=1e-12)


def test_totals_without_price_have_no_cost_and_devices_multiply(capsys):
    (row,) = csv_rows(capsys, "totals", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--stage", "decode",
                      "--tp", "4")
    assert row["cost_per_million_tokens"] == row["cost_per_million_tokens_expected"] == "nan"
    # four devices at 700 W each over one token per tpot_expected_s (batch 1)
    assert float(row["energy_per_token_j"]) == pytest.approx(4 * 700 * float(row["tpot_expected_s"]), rel=1e-12)
    (tpu,) = csv_rows(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", "tpu-v5e", "--stage", "decode",
                      "--weight-dtype", "bf16", "--act-dtype", "bf16", "--kv-dtype", "bf16")
    assert tpu["energy_per_token_j"] == "nan" and tpu["energy_basis"] == ""  # no tdp_w in the catalog


def test_config_entry_prices_and_measured_power_wins():
    gpu = rc.resolve_gpu("h100-sxm", {"price_per_hour": 2.5, "power_w": 550})
    assert (gpu.price_per_hour, gpu.power_w, gpu.tdp_w) == (2.5, 550, 700)
    assert "overridden" not in gpu.source  # a price and a measured power are not spec changes
    from roofline.engine.cost import device_power
    assert device_power(gpu) == (550, ENERGY_MEASURED)
    assert rc.resolve_gpu("h100-sxm", {"tdp_w": 600}).tdp_w == 600


@pytest.mark.parametrize("entry, message", [
    ({"price_per_hour": -2}, "gpus.h100-sxm.price_per_hour: -2 is not allowed; expected a positive number"),
    ({"power_w": "lots"}, "gpus.h100-sxm.power_w: 'lots' is not a number; expected a positive number"),
    ({"tdp_w": 0}, "gpus.h100-sxm.tdp_w: 0 is not allowed; expected a positive number"),
])
def test_bad_price_or_power_in_config_is_one_line(entry, message):
    with pytest.raises(RooflineInputError) as error:
        rc.resolve_gpu("h100-sxm", entry)
    assert str(error.value) == message


def test_schema_refuses_a_negative_price():
    config = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {"price_per_hour": -1}}}
    messages = [describe_schema_error(e) for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)]
    assert len(messages) == 1 and "gpus.h100-sxm.price_per_hour" in messages[0] and "\n" not in messages[0]


PLAN = ("plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "h200-sxm", "--isl", "1024", "--osl",
        "1024", "--tpot-ms", "50", "--dtypes", "fp16", "fp8", "--max-devices", "2")


def test_plan_rows_carry_cost_per_gpu_price(capsys):
    rows = csv_rows(capsys, *PLAN, "--price-per-hour", "2", "--price-per-hour", "h200-sxm=3", "--top", "40")
    assert tuple(rows[0])[-len(COST_COLUMNS):] == COST_COLUMNS
    for row in rows:
        price = 3 if row["gpu"] == "h200-sxm" else 2  # the gpu's own price wins over the general one
        deployment = float(row["tokens_per_s_per_device"]) * int(row["devices"])
        assert float(row["cost_per_million_tokens"]) == pytest.approx(price * int(row["devices"]) / 3600 /
                                                                      deployment * 1e6, rel=1e-9)
        # energy: 700 W per device over the expected tokens/s per device
        assert float(row["energy_per_token_j"]) == pytest.approx(700 / float(row["tokens_per_s_per_device_expected"]),
                                                                 rel=1e-9)


def test_rank_on_cost_is_cheapest_first_then_faster_per_user(capsys):
    rows = csv_rows(capsys, *PLAN, "--price-per-hour", "h100-sxm=2", "--price-per-hour", "h200-sxm=3",
                    "--rank-on", "cost")
    cost = [float(r["cost_per_million_tokens_expected"]) for r in rows]
    per_user = [1 / float(r["tpot_expected_s"]) for r in rows]
    assert rows and cost == sorted(cost) and all(a < b for a, b in zip(per_user, per_user[1:]))
    # the cheapest row is the cheapest of every gpu's frontier
    every = csv_rows(capsys, *PLAN, "--price-per-hour", "h100-sxm=2", "--price-per-hour", "h200-sxm=3")
    assert cost[0] <= min(float(r["cost_per_million_tokens_expected"]) for r in every)


@pytest.mark.parametrize("extra, message", [
    (("--rank-on", "cost"), "--rank-on: cost needs a price for every candidate gpu; 'h100-sxm' has none"),
    (("--price-per-hour", "h200-sxm=3", "--rank-on", "cost"), "'h100-sxm' has none"),
    (("--price-per-hour", "b200=3"), "--price-per-hour: 'b200' is not a candidate gpu; candidates: h100-sxm, "
                                     "h200-sxm"),
    (("--price-per-hour", "h100-sxm=cheap"), "--price-per-hour: 'cheap' is not a number"),
    (("--price-per-hour", "0"), "--price-per-hour: 0 is not allowed; expected a positive number"),
    (("--rank-on", "price"), "--rank-on: unknown value 'price'"),
])
def test_bad_price_or_ranking_on_the_command_line_is_one_line(capsys, extra, message):
    code, out, err = run(capsys, *PLAN, *extra)
    assert code == 2 and message in err and err.count("\n") == 1


def test_totals_price_must_be_positive(capsys):
    code, _, err = run(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode",
                       "--price-per-hour", "-1")
    assert code == 2 and "--price-per-hour: -1 is not allowed" in err


@pytest.mark.parametrize("name", COST_COLUMNS)
def test_readme_lists_cost_column(name):
    from test_plan_workflow import README

    assert f"`{name}`" in README


def test_page_one_cost_table_only_where_priced():
    from roofline.engine.models import get_model
    from roofline.engine.scenario import Scenario
    from roofline.pipeline.tables import grid_tables
    from roofline.report.cost import cost_section
    from roofline.report.render import environment

    h100 = rc.resolve_gpu("h100-sxm", {"price_per_hour": 3.6})
    frame = grid_tables([get_model("llama-2-7b")], [h100, hardware.get_accelerator("rtx-a6000")],
                        ["prefill", "decode"], Scenario(weight_dtype="fp16"))["totals"]
    assert cost_section(frame[frame["gpu"] == "rtx-a6000"]) is None  # nothing priced: no table
    section = cost_section(frame)
    decode = [row for row in section["rows"] if row["stage"].startswith("decode")]
    h100_decode = frame[(frame["gpu"] == "h100-sxm") & (frame["stage"] == "decode")].iloc[0]
    # 3.6 USD/h = 0.001 USD/s; one token per tpot_s at batch 1: 0.001 x tpot_s x 1e6 = 1000 x tpot_s USD
    assert decode[0]["cost"] == f"{1000 * h100_decode['tpot_s']:.3g} USD"
    assert decode[1]["cost"] == "—" and decode[1]["energy"].endswith(" J (TDP: at most)")  # the A6000 has no price
    html = environment().get_template("cost.html.j2").render(cost=section)
    assert "Cost and energy per token" in html and "USD" in html
    assert environment().get_template("cost.html.j2").render(cost=None).strip() == ""
