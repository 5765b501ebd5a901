"""Human units for the report: every number the templates show is formatted here (templates do no arithmetic).

Tables hold SI base units (FLOP, byte, s, FLOP/s, byte/s); these helpers pick a decimal prefix and 3 significant
digits. A missing value (None or NaN, e.g. the time per output token of a prefill row) is shown as an em dash.
"""
from __future__ import annotations

import math
import re

from .. import display

DASH = "—"


def missing(value) -> bool:
    """None or NaN (not a number the report can show)."""
    if value is None:
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def sig(value: float, digits: int = 3) -> str:
    """`digits` significant digits, no exponent, thousands separated: 1215.3 -> '1,215', 0.0123 -> '0.0123'
    (the formatter the figures use too: `roofline.display.sig`)."""
    return DASH if missing(value) else display.sig(value, digits)


def prefixed(value: float, unit: str, digits: int = 3) -> str:
    """Value with a decimal SI prefix: prefixed(6.87e10, 'FLOP') -> '68.7 GFLOP'."""
    return DASH if missing(value) else display.prefixed(value, unit, digits)


def flops(value: float) -> str:
    """FLOP count: '68.7 GFLOP'."""
    return prefixed(value, "FLOP")


def nbytes(value: float) -> str:
    """Bytes, decimal: '67.1 MB', '13.5 GB'."""
    return prefixed(value, "B")


def capacity(value: float) -> str:
    """A device's memory capacity as the vendor sizes it, in binary units: '48 GiB', '141 GiB'."""
    return f"{value / 2**30:.4g} GiB"


def usable(usable_bytes: float, memory_bytes: float) -> str:
    """The part of a device's memory a deployment may fill: '46.4 GB usable of 48 GiB (51.5 GB)': the capacity as
    the vendor sizes it, in decimal GB too, so that the share (memory_utilization) can be checked."""
    return f"{nbytes(usable_bytes)} usable of {capacity(memory_bytes)} ({nbytes(memory_bytes)})"


def rate(value: float, dtype: str | None = None) -> str:
    """An attainable rate in the unit of the roofline axes: '155 TFLOP/s', '0.768 TFLOP/s'; in TOP/s when the
    operator computes in an integer dtype ('619 TOP/s' for an int8 GEMM), as the roof it sits under says."""
    return DASH if missing(value) else display.tera_rate(value, dtype)


def peak(value: float, dtype: str) -> str:
    """A dense peak in TFLOP/s, or TOP/s for integer dtypes."""
    return DASH if missing(value) else display.tera_rate(value, dtype)


def bandwidth(value: float) -> str:
    """byte/s: '768 GB/s', '3.35 TB/s'."""
    return DASH if missing(value) else display.bandwidth(value)


def seconds(value: float) -> str:
    """Time: '444 µs', '18.6 ms', '1.23 s', '85 ns'."""
    return DASH if missing(value) else display.seconds(value)


def intensity(value: float) -> str:
    """FLOP/byte, 3 significant digits, whole numbers from 1,000 up ('1,215', '114', '0.999', '0')."""
    return sig(value, 4) if not missing(value) and abs(float(value)) >= 999.5 else sig(value)


def percent(fraction: float) -> str:
    """'72%', '0.5%', '<0.1%', '100%', '10%' (0.0996 rounds to 10%, not '10.0%')."""
    if missing(fraction):
        return DASH
    value = percent_value(fraction)
    if value == 0:
        return "0%" if float(fraction) == 0 else "<0.1%"
    if value < 10 and round(value) != value:
        return f"{value:.1f}%"
    return f"{value:.0f}%"


def percent_value(fraction: float) -> float:
    """The percentage `percent` prints, as a number (one decimal below 10%, whole from 10% up): words that
    classify a share (`text.bound_phrase`) use it, so '10%' always reads the same."""
    value = float(fraction) * 100
    tenth = round(value, 1)
    # whole percents from the value itself, half up: rounding its tenth again read 56.51% as 56.5% and then, half to
    # even, as 56%
    return float(math.floor(value + 0.5)) if tenth >= 10 else tenth


def times(ratio: float) -> str:
    """Speed-up or ratio: '3.62×', '1.00×', '12.1×'."""
    return DASH if missing(ratio) else f"{sig(ratio)}×"


def tokens_per_s(value: float) -> str:
    return DASH if missing(value) else f"{sig(value)} tokens/s"


def count(value: float) -> str:
    """A plain count with a word prefix: 6.74e9 -> '6.74 B'."""
    if missing(value):
        return DASH
    for scale, word in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{sig(value / scale)} {word}"
    return sig(value)


def integer(value) -> str:
    """A whole number with thousands separators: 32.0 -> '32', 131072 -> '131,072'."""
    return DASH if missing(value) else f"{round(float(value)):,}"


def yes_no(flag) -> str:
    return DASH if missing(flag) else ("yes" if bool(flag) else "no")


#: WORD JOINER: no line break between the characters it joins (renders as nothing)
WORD_JOINER = "\u2060"


def unbroken_plan(deployment: str) -> str:
    """A deployment label whose parts stay whole in a narrow column: '4 x H200 SXM 141GB, TP 4, EP 4' breaks between
    its parts, never as 'EP' + '4' or '4' + 'x H200' (no-break spaces inside each)."""
    return re.sub(r"\b(TP|PP|EP|DP) (\d)", "\\1\u00a0\\2", re.sub(r"^(\d+) x ", "\\1\u00a0x ", str(deployment)))


def unbroken_units(text: str) -> str:
    """`text` with no line break allowed after a unit's slash ('tokens/s', 'FLOP/byte'): a narrow header wraps
    between words, never as 'tokens/' + 's'."""
    return text.replace("/", "/" + WORD_JOINER)
