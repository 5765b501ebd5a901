"""Issue 20, H4-H8: calibration tables are checked before any estimate uses them: the file is a regular UTF-8 CSV
(one line otherwise), every row's numbers are finite and in range (rows that fail are left out and reported, a
table with none left is refused), a table cut off mid-line loses its last row, and a table is applied only to the
chip it was measured on unless the user allows any device. Ends with property tests feeding random bytes and
random numeric rows to the reader."""
import csv
import io
import logging
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cli import app as cli
from roofline.engine import hardware, models
from roofline.engine.errors import RooflineInputError
from roofline.engine.scenario import Scenario
from roofline.estimate import table_checks
from roofline.estimate.calibration import check_table, read_table, shipped_path, table_path
from roofline.estimate.expected import analyze
from roofline.estimate.lookup import calibration_for
from roofline.pipeline import config as rc

#: a plain-text table measured on the H100 (2590 rows: the previously shipped vidur-based table)
H100 = Path(__file__).parent / "data" / "calibrations" / "h100-sxm.vidur-2590.csv"
TOTALS = ["totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode", "--format", "csv"]


def _rows() -> list[dict]:
    return list(csv.DictReader(io.StringIO(H100.read_text())))


def _write(path, rows, ending="\n") -> str:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator=ending)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def _mutated(tmp_path, column, value, first=None) -> str:
    rows = _rows()
    for row in rows[:first]:
        row[column] = value
    return _write(tmp_path / f"{column}-{value}.csv", rows)


def _cli_error(capsys, *argv) -> str:
    assert cli.main([*TOTALS, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("column, value, expected", [
    ("bytes", "0", "bytes 0 is not allowed; expected a finite number from 1 to 1e+15 byte"),  # H4
    ("measured_s", "inf", "measured_s inf is not allowed"),  # H6
    ("measured_s", "nan", "measured_s nan is not allowed"),
    ("measured_s", "0", "measured_s 0 is not allowed"),
    ("measured_s", "-1e-05", "measured_s -1e-05 is not allowed"),
    ("flops", "-5", "flops -5 is not allowed; expected a finite number from 0 to 1e+20 FLOP"),
    ("bytes", "-4096", "bytes -4096 is not allowed"),
    ("bytes", "x", "bytes 'x' is not a number"),
    ("op_class", "", "op_class is empty"),
])
def test_a_table_whose_every_row_fails_is_refused_in_one_line(tmp_path, capsys, column, value, expected):
    path = _mutated(tmp_path, column, value)
    with pytest.raises(RooflineInputError) as error:
        read_table(path)
    message = str(error.value)
    assert "\n" not in message and "has no usable rows; 2590 row(s) fail the checks, first: line 2: " in message
    assert expected in message, message
    assert expected in _cli_error(capsys, "--calibration", path)


def test_rows_that_fail_are_left_out_and_reported_once(tmp_path, caplog):
    path = _mutated(tmp_path, "measured_s", "1e300", first=5)  # H6: 1e300 s would make expected times absurd
    table = table_checks.read_checked(path)
    assert len(table.rows) == 2585 and table.rejected == 5
    assert table.example.startswith("line 2: measured_s 1e300 is not allowed")
    with caplog.at_level(logging.WARNING, logger="roofline"):
        assert check_table(path, hardware.get_accelerator("h100-sxm")) == path
    assert [r.getMessage() for r in caplog.records] == [table.report(path)]
    assert "left out 5 of 2590 rows that fail the checks; first: line 2: measured_s 1e300" in table.report(path)
    assert max(r["measured_s"] for r in read_table(path)) < 1.0


def test_expected_times_from_a_partly_bad_table_stay_finite(tmp_path):
    path = _mutated(tmp_path, "measured_s", "inf", first=100)
    gpu = replace(hardware.get_accelerator("h100-sxm"), calibration=path)
    _, total = analyze(models.catalog()["llama-3.1-8b"], gpu, "decode", Scenario())
    assert math.isfinite(total["tpot_expected_s"]) and total["tokens_per_s_expected"] > 0
    assert calibration_for(gpu).measured


def test_a_table_cut_off_mid_line_loses_its_last_row(tmp_path):
    text = H100.read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: text.index("\n", len(text) // 2) + 8])  # eight characters into a line
    table = table_checks.read_checked(str(cut))
    assert table.rejected == 1 and "the table was cut off" in table.example
    complete = text[: text.index("\n", len(text) // 2) + 1]
    cut.write_text(complete)
    assert table_checks.read_checked(str(cut)).rejected == 0 and len(table.rows) == complete.count("\n") - 1
    cut.write_text(text.splitlines()[0] + "\n")
    with pytest.raises(RooflineInputError, match="has no usable rows$"):
        read_table(str(cut))


@pytest.mark.parametrize("content, expected", [
    ("op_class,dtype\ngemm,fp16\n".encode(), "lacks column(s) flops, bytes, measured_s, source"),
    (H100.read_bytes()[:2000] + "café\n".encode("latin-1"), "is not UTF-8 text (byte 2003)"),  # H5
    (bytes(range(256)) * 8, "is not UTF-8 text (byte 128)"),
    (b"op_class,dtype,flops,bytes,measured_s,source\n\"" + b"x" * 200_000,
     "is not a readable CSV (line 2: field larger than field limit"),
    (b"op_class,dtype,flops,bytes,measured_s,source\n\"gemm,fp16\x00\n", "line 2: 1 field(s), the header has 6"),
    (b"", "lacks column(s)"),
])
def test_unreadable_files_are_one_line(tmp_path, capsys, content, expected):
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    with pytest.raises(RooflineInputError) as error:
        read_table(str(path))
    assert "\n" not in str(error.value) and expected in str(error.value), str(error.value)
    assert expected in _cli_error(capsys, "--calibration", str(path))


def test_directories_fifos_and_devices_say_what_they_are(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((tmp_path, "is a directory"), (fifo, "is a FIFO"), ("/dev/zero", "is a device"),
                       (tmp_path / "none.csv", "does not exist")):
        assert f"--calibration: file '{path}' {kind}" in _cli_error(capsys, "--calibration", str(path))


def test_a_gzipped_table_is_read_and_a_broken_one_is_one_line(tmp_path):
    import gzip
    good, broken = tmp_path / "t.csv.gz", tmp_path / "b.csv.gz"
    good.write_bytes(gzip.compress(H100.read_bytes()))
    assert len(table_checks.read_checked(str(good)).rows) == 2590
    broken.write_bytes(gzip.compress(H100.read_bytes())[:500])
    with pytest.raises(RooflineInputError, match="cannot be read"):
        table_checks.read_checked(str(broken))


def test_every_shipped_table_passes_every_check():
    for key in ("a100-sxm-80gb", "h100-sxm", "h200-sxm"):
        table = table_checks.read_checked(str(shipped_path(key)))
        assert table.rejected == 0 and table.devices == (key,)
        table_checks.check_device(table, hardware.get_accelerator(key), str(shipped_path(key)))


def test_every_shipped_table_runs_near_its_bound_and_one_in_milliseconds_is_refused(tmp_path, capsys):
    # `measured_s` written in ms had been taken as seconds: expected TPOT 5.6-6.0 s beside a 4.86 ms bound
    for path in sorted(shipped_path("h100-sxm").parent.glob("*.csv.gz")):
        key = path.name.split(".")[0]
        table_checks.check_units(table_checks.read_checked(str(path)), hardware.get_accelerator(key), str(path))
    rows = table_checks.read_checked(str(shipped_path("h100-sxm"))).rows
    milliseconds = _write(tmp_path / "ms.csv", [{**row, "measured_s": row["measured_s"] * 1e3} for row in rows])
    assert cli.main([*TOTALS, "--calibration", milliseconds]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"roofline: error: --calibration: '{milliseconds}': its kernels of at least 10 us of "
                           "bound on h100-sxm run a median 1,") and line.endswith(
        "times their roofline bound (real tables: 1.4 to 2.4 times): measured_s is in seconds, not milliseconds; or "
        "the table is of another device"), line
    # another device's table allowed on purpose (a CPU's measured table on an H100) runs at its own speed
    assert cli.main([*TOTALS, "--calibration", milliseconds, "--calibration-any-device"]) == 0


def test_a_table_of_another_chip_is_refused_unless_any_device_is_allowed(capsys, tmp_path):  # H7
    a100 = str(shipped_path("a100-sxm-80gb"))
    argv = [*TOTALS[:4], "h200-sxm", *TOTALS[5:], "--calibration", a100]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was measured on a100-sxm-80gb, not on h200-sxm" in err
    assert "--calibration-any-device" in err
    assert cli.main(argv + ["--calibration-any-device"]) == 0
    capsys.readouterr()
    assert "needs --calibration" in _cli_error(capsys, "--calibration-any-device")
    with pytest.raises(RooflineInputError, match=r"^gpus\.h200-sxm\.calibration: .* was measured on a100-sxm-80gb"):
        rc.resolve_gpu("h200-sxm", {"calibration": a100})
    assert rc.resolve_gpu("h200-sxm", {"calibration": a100, "calibration_any_device": True}).calibration == a100
    with pytest.raises(RooflineInputError, match="calibration_any_device: 'yes' is not allowed; expected true"):
        rc.resolve_gpu("h200-sxm", {"calibration": a100, "calibration_any_device": "yes"})
    unnamed = _write(tmp_path / "unnamed.csv", [{k: v for k, v in r.items() if k != "gpu"} for r in _rows()])
    with pytest.raises(RooflineInputError, match="does not say which device it was measured on"):
        rc.resolve_gpu("h100-sxm", {"calibration": unnamed})
    assert rc.resolve_gpu("h100-sxm", {"calibration": unnamed, "calibration_any_device": True})


def test_an_alias_takes_its_base_chips_table():  # H8
    renamed = rc.resolve_gpu("h100-sxm", {"base": "h200-sxm"})  # the H200 under the H100's key
    assert renamed.chip == "h200-sxm" and table_path(renamed) == str(shipped_path("h200-sxm"))
    tp8 = rc.resolve_gpu("h100-tp8", {"base": "h100-sxm"})
    assert tp8.chip == "h100-sxm" and table_path(tp8) == str(shipped_path("h100-sxm"))
    new = rc.resolve_gpu("my-gpu", {"name": "H100 SXM5 80GB", "memory_gb": 80, "bandwidth_gbps": 3350,
                                    "peak_tflops": {"fp16": 989}})
    assert new.chip == "" and table_path(new) is None  # new hardware: no measured chip, whatever its name
    for key, gpu in hardware.catalog().items():
        assert gpu.chip == key


def test_converted_rows_get_the_same_checks():
    rows = [{"op_class": "gemm", "dtype": "fp16", "flops": 1e9, "bytes": 0, "measured_s": 1e-5, "source": "x"},
            {"op_class": "gemm", "dtype": "fp16", "flops": 1e9, "bytes": 1e6, "measured_s": 1e-5, "source": "x"}]
    table = table_checks.check_rows(rows)
    assert len(table.rows) == 1 and table.rejected == 1 and table.example.startswith("row 1: bytes 0")
    with pytest.raises(RooflineInputError, match="converted table has no usable rows; first: row 1: bytes 0"):
        table_checks.check_rows(rows[:1])


HEADER = "device,gpu,source,op_class,op,dtype,flops,bytes,measured_s\n"


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes_are_a_table_or_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("random") / "t.csv"
    path.write_bytes(data)
    try:
        table = table_checks.read_checked(str(path))
    except RooflineInputError as error:
        assert "\n" not in str(error)
        return
    assert table.rows  # anything accepted is checked rows


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_after_a_header_are_rows_or_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("random") / "t.csv"
    path.write_bytes(HEADER.encode() + data)
    try:
        table = table_checks.read_checked(str(path))
    except RooflineInputError as error:
        assert "\n" not in str(error)
        return
    for row in table.rows:
        assert all(math.isfinite(row[name]) for name in ("flops", "bytes", "measured_s"))
        assert row["bytes"] >= 1 and row["measured_s"] > 0 and row["flops"] >= 0


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30),
                    st.sampled_from(["", "x", "1e", "-0", "0x10", "1_0", " 5 ", "NaN", "-inf"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(NUMBERS, NUMBERS, NUMBERS), min_size=1, max_size=12))
def test_random_numeric_rows_keep_exactly_the_rows_in_range(tmp_path_factory, numbers):
    path = tmp_path_factory.mktemp("rows") / "t.csv"
    lines = [HEADER] + [f"d,h100-sxm,measured,gemm,qkv_proj,fp16,{f},{b},{m}\n" for f, b, m in numbers]
    path.write_text("".join(lines))

    def ok(text, low, high):
        try:
            value = float(text)
        except ValueError:
            return False
        return math.isfinite(value) and low <= value <= high

    ranges = table_checks.NUMBER_RANGES
    expected = [(f, b, m) for f, b, m in numbers
                if ok(str(f), *ranges["flops"][:2]) and ok(str(b), *ranges["bytes"][:2])
                and ok(str(m), *ranges["measured_s"][:2])]
    try:
        table = table_checks.read_checked(str(path))
    except RooflineInputError as error:
        assert not expected and "has no usable rows" in str(error) and "\n" not in str(error)
        return
    assert [(r["flops"], r["bytes"], r["measured_s"]) for r in table.rows] == [
        (float(str(f)), float(str(b)), float(str(m))) for f, b, m in expected]
    assert table.rejected == len(numbers) - len(expected)


def test_a_catalog_device_whose_speeds_an_entry_moves_takes_no_table_of_its_old_chip():
    # h100-sxm: {bandwidth_gbps: 20000, calibration: <the H100's own table>}: another chip now; its table is refused
    # as another chip's unless any device is allowed, with the reason
    h100 = str(shipped_path("h100-sxm"))
    with pytest.raises(RooflineInputError, match=r"was measured on h100-sxm, and h100-sxm's entry moves its "
                                                 r"bandwidth or a peak past 10% of that chip's, so it is another chip"):
        rc.resolve_gpu("h100-sxm", {"bandwidth_gbps": 20000, "calibration": h100})
    assert rc.resolve_gpu("h100-sxm", {"bandwidth_gbps": 20000, "calibration": h100,
                                       "calibration_any_device": True}).calibration == h100
