"""Checks of a calibration table before any estimate uses it: the file, its text, its rows and its device.

A table is a CSV file (gzip-compressed when its name ends in .gz), UTF-8, with a header naming at least REQUIRED.
`read_checked(path)` returns a CheckedTable: the rows that pass, numbers as floats, and the count and first example
of the rows that do not. A row fails when it has more or fewer fields than the header, when it is the last line and
the file does not end with a line break (a table cut off mid-line: `roofline measure` ends every table with one),
when op_class or dtype is empty, or when a number is missing, not a number, not finite or outside NUMBER_RANGES
(bytes = 0 would divide by zero; measured_s = inf or 1e300 would make every expected time infinite). Anything that
makes the whole file unreadable (not a regular file, too large, not UTF-8, not a CSV, a missing column, no row
left) is one RooflineInputError line. `check_device` refuses a table measured on another chip than the device it
is applied to, unless the device allows any (Accelerator.calibration_any_device).

Interface for the calibration reader: `read_checked(path, numbers) -> CheckedTable` (its `.rows` replace the parsed
rows, its `.report(path)` is the one line about rejected rows, "" when none) and `check_device(table, gpu, path)`;
`check_rows(rows, numbers)` applies the row checks to rows that come from elsewhere (a converted table).
"""
from __future__ import annotations

import csv
import gzip
import io
import math
import statistics
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..engine.errors import RooflineInputError, clip
from ..engine.hardware import OTHER_CHIP, SAME_CHIP_WITHIN, Accelerator
from ..engine.hf_config import not_a_file

#: Columns every calibration table needs.
REQUIRED = ("op_class", "dtype", "flops", "bytes", "measured_s", "source")
#: Text columns a row must fill.
NON_EMPTY = ("op_class", "dtype")
#: Allowed range of each number of a row (inclusive), with its unit: flops may be 0 (a copy, a gather), bytes and
#: measured_s may not. A kernel over 1e20 FLOP, 1 PB or 1000 s is no kernel of a serving step; under 1e-10 s
#: (0.1 ns) no GPU launches one.
NUMBER_RANGES = {"flops": (0.0, 1e20, "FLOP"), "bytes": (1.0, 1e15, "byte"), "measured_s": (1e-10, 1e3, "s")}
#: Largest table read, decompressed [bytes]: the shipped ones are a few MB.
MAX_TABLE_BYTES = 256 * 2**20
#: Column naming the catalog key of the chip a table was measured on ("" or absent: not said).
DEVICE_COLUMN = "gpu"


@dataclass(frozen=True)
class CheckedTable:
    """The rows of a table that pass the checks (numbers as floats) and what was left out."""

    rows: tuple[dict, ...]
    rejected: int = 0
    example: str = ""  # the first rejected row: "line 7: bytes 0 is not allowed; expected 1 to 1e+15 byte"

    @property
    def devices(self) -> tuple[str, ...]:
        """The chips (catalog keys) the rows say they were measured on, in order of appearance."""
        return tuple(key for key in dict.fromkeys(row.get(DEVICE_COLUMN) or "" for row in self.rows) if key)

    def report(self, path: str) -> str:
        """One line about the rows left out ("" when none was)."""
        if not self.rejected:
            return ""
        return (f"calibration: '{clip(path, 200)}': left out {self.rejected} of {self.rejected + len(self.rows)} "
                f"rows that fail the checks; first: {self.example}")


def read_checked(path: str, numbers: Mapping[str, float | None] | None = None) -> CheckedTable:
    """The checked rows of the table at `path`; `numbers` = the numeric columns parsed as floats, with the value a
    row without one gets (None: required, see NUMBER_RANGES; default: the three of REQUIRED)."""
    text = read_text(path)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        missing = [c for c in REQUIRED if c not in (header or ())]
        if missing:
            raise RooflineInputError(f"calibration: '{clip(path, 200)}' lacks column(s) {', '.join(missing)}; a "
                                     f"calibration table needs {', '.join(REQUIRED)} (as `roofline measure` writes "
                                     "them)")
        lines = [(reader.line_num, fields) for fields in reader]
    except csv.Error as error:
        raise RooflineInputError(f"calibration: '{clip(path, 200)}' is not a readable CSV (line {reader.line_num}: "
                                 f"{error})") from None
    if lines and not text.endswith(("\n", "\r")):
        lines[-1] = (lines[-1][0], None)  # cut off mid-line: its last field may be a shortened number
    return _check_lines(path, header, lines, numbers)


def _check_lines(path: str, header: list[str], lines, numbers) -> CheckedTable:
    good, rejected, example = [], 0, ""
    for line, fields in lines:
        if fields == []:
            continue  # a blank line
        if fields is None:
            problem = "the file ends inside this line (no line break after it): the table was cut off"
        elif len(fields) != len(header):
            problem = f"{len(fields)} field(s), the header has {len(header)}"
        else:
            row, problem = check_row(dict(zip(header, fields)), numbers)
            if row is not None:
                good.append(row)
                continue
        rejected += 1
        example = example or f"line {line}: {problem}"
    table = CheckedTable(tuple(good), rejected, example)
    if not good:
        why = f"; {rejected} row(s) fail the checks, first: {example}" if rejected else ""
        raise RooflineInputError(f"calibration: '{clip(path, 200)}' has no usable rows{why}")
    return table


def check_row(row: dict, numbers: Mapping[str, float | None] | None = None) -> tuple[dict | None, str]:
    """(the row with its numbers as floats, "") or (None, why it fails)."""
    for name in NON_EMPTY:
        if not (row.get(name) or "").strip():
            return None, f"{name} is empty"
    for name, default in (numbers or dict.fromkeys(NUMBER_RANGES)).items():
        text = row.get(name)
        if text in (None, "") and default is not None:
            row[name] = default
            continue
        try:
            value = float(text)
        except (TypeError, ValueError):
            return None, f"{name} {clip(repr(text), 40)} is not a number"
        low, high, unit = NUMBER_RANGES.get(name, (0.0, math.inf, ""))  # another column (a shape): >= 0
        if not math.isfinite(value) or not low <= value <= high:
            return None, f"{name} {clip(text, 40)} is not allowed; expected a finite number from {low:g} to " \
                         f"{high:g}{' ' + unit if unit else ''}"
        row[name] = value
    return row, ""


def check_rows(rows: Iterable[dict], numbers: Mapping[str, float | None] | None = None,
               where: str = "converted table") -> CheckedTable:
    """The row checks of read_checked on rows from elsewhere (a table converted from another source); each row's
    values as text or numbers."""
    good, rejected, example = [], 0, ""
    for index, row in enumerate(rows, start=1):
        checked, problem = check_row({k: ("" if v is None else str(v)) for k, v in row.items()}, numbers)
        if checked is None:
            rejected += 1
            example = example or f"row {index}: {problem}"
        else:
            good.append(checked)
    if not good:
        raise RooflineInputError(f"calibration: {where} has no usable rows"
                                 + (f"; first: {example}" if example else ""))
    return CheckedTable(tuple(good), rejected, example)


def read_text(path: str) -> str:
    """The text of a table file: a regular file of at most MAX_TABLE_BYTES (decompressed), UTF-8 (a BOM is
    allowed), gunzipped when its name ends in .gz; one line otherwise."""
    file = Path(path)
    shown = clip(path, 200)
    problem = not_a_file(file, "a calibration table")
    if problem:
        raise RooflineInputError(f"calibration: file '{shown}' {problem}; expected a CSV written by "
                                 "`roofline measure --out`")
    try:
        with (gzip.open(file, "rb") if file.suffix == ".gz" else file.open("rb")) as handle:
            raw = handle.read(MAX_TABLE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise RooflineInputError(f"calibration: file '{shown}' cannot be read ({clip(reason, 80)})") from None
    if len(raw) > MAX_TABLE_BYTES:
        raise RooflineInputError(f"calibration: file '{shown}' is larger than {MAX_TABLE_BYTES // 2**20} MiB; a "
                                 "calibration table is a few MB")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise RooflineInputError(f"calibration: file '{shown}' is not UTF-8 text (byte {error.start}); a "
                                 "calibration table is a UTF-8 CSV") from None


def check_device(table: CheckedTable, gpu: Accelerator, path: str) -> None:
    """Refuse a table whose rows name another chip than `gpu`'s (its `chip`, else its key), or name none, unless
    gpu.calibration_any_device."""
    if gpu.calibration_any_device:
        return
    chip, devices = gpu.measured_as, table.devices
    allow = ("; to apply it anyway, allow any device (--calibration-any-device, or calibration_any_device: true in "
             "the gpu entry)")
    if not devices:
        raise RooflineInputError(f"calibration: '{clip(path, 200)}' does not say which device it was measured on "
                                 f"(no '{DEVICE_COLUMN}' column, or an empty one), so it cannot be checked against "
                                 f"{gpu.key}{allow}")
    if set(devices) != {chip}:
        if chip == OTHER_CHIP:  # a catalog device whose entry moved its speeds: no catalog chip's table fits it
            raise RooflineInputError(f"calibration: '{clip(path, 200)}' was measured on {', '.join(devices)}, and "
                                     f"{gpu.key}'s entry moves its bandwidth or a peak past {SAME_CHIP_WITHIN:.0%} of "
                                     f"that chip's, so it is another chip{allow}")
        ours = chip if chip == gpu.key else f"{chip} (the chip of {gpu.key})"
        raise RooflineInputError(f"calibration: '{clip(path, 200)}' was measured on {', '.join(devices)}, not on "
                                 f"{ours}; use a table measured on {chip}{allow}")


#: Kernels whose roofline bound on the device is at least UNITS_FLOOR_S (launch overhead no longer dominates) run a
#: median 1.4 to 2.4 times their bound in every shipped table; a median past UNITS_SLIP times it is a table in
#: another unit (milliseconds in measured_s: ~1,000 times), or of another device than the one it is applied to
UNITS_FLOOR_S, UNITS_SLIP = 1e-5, 100.0


def check_units(table: CheckedTable, gpu: Accelerator, path: str) -> None:
    """Refuse a table whose kernels above UNITS_FLOOR_S of bound on `gpu` run a median UNITS_SLIP times their bound
    or more (collectives left out: their bound is the link's, not the memory's). Not applied where the device allows
    any device's table (a CPU's measured table on an H100 runs ~190x its bound by design)."""
    ratios = []
    for row in table.rows:
        if row["op_class"] == "communication":
            continue
        peak = gpu.peak_flops_per_s.get(row["dtype"], 0.0)
        bound = max(row["flops"] / peak if peak else 0.0, row["bytes"] / gpu.bandwidth_bytes_per_s)
        if bound >= UNITS_FLOOR_S:
            ratios.append(row["measured_s"] / bound)
    median = statistics.median(ratios) if ratios else 0.0
    if median > UNITS_SLIP:
        raise RooflineInputError(
            f"calibration: '{clip(path, 200)}': its kernels of at least {UNITS_FLOOR_S * 1e6:g} us of bound on "
            f"{gpu.key} run a median {median:,.0f} times their roofline bound (real tables: 1.4 to 2.4 times): "
            "measured_s is in seconds, not milliseconds; or the table is of another device")
