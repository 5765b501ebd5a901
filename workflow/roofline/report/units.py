"""Human units for the report: every number the templates show is formatted here (templates do no arithmetic).

Tables hold SI base units (FLOP, byte, s, FLOP/s, byte/s); these helpers pick a decimal prefix and 3 significant
digits. A missing value (None or NaN, e.g. the time per output token of a prefill row) is shown as an em dash.
"""
from __future__ import annotations

import math

DASH = "—"
_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def missing(value) -> bool:
    """None or NaN (not a number the report can show)."""
    if value is None:
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def sig(value: float, digits: int = 3) -> str:
    """`digits` significant digits, no exponent, thousands separated: 1215.3 -> '1,215', 0.0123 -> '0.0123'."""
    if missing(value):
        return DASH
    value = float(value)
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "∞" if value > 0 else "−∞"
    value = float(f"{value:.{digits}g}")  # round first: 0.9996 -> 1.00, not 1.000
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{value:,.{decimals}f}"
    return text.replace("-", "−")


def prefixed(value: float, unit: str, digits: int = 3) -> str:
    """Value with a decimal SI prefix: prefixed(6.87e10, 'FLOP') -> '68.7 GFLOP'."""
    if missing(value):
        return DASH
    value = float(value)
    if value == 0:
        return f"0 {unit}"
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale * 0.9995:
            return f"{sig(value / scale, digits)} {prefix}{unit}"
    return f"{sig(value, digits)} {unit}"


def flops(value: float) -> str:
    """FLOP count: '68.7 GFLOP'."""
    return prefixed(value, "FLOP")


def nbytes(value: float) -> str:
    """Bytes, decimal: '67.1 MB', '13.5 GB'."""
    return prefixed(value, "B")


def rate(value: float) -> str:
    """FLOP/s in TFLOP/s (the unit of the roofline axes): '155 TFLOP/s', '0.768 TFLOP/s'."""
    return DASH if missing(value) else f"{sig(float(value) / 1e12)} TFLOP/s"


def peak(value: float, dtype: str) -> str:
    """A dense peak in TFLOP/s, or TOP/s for integer dtypes."""
    unit = "TOP/s" if dtype.startswith("int") else "TFLOP/s"
    return DASH if missing(value) else f"{sig(float(value) / 1e12)} {unit}"


def bandwidth(value: float) -> str:
    """byte/s: '768 GB/s', '3.35 TB/s'."""
    return prefixed(value, "B/s")


def seconds(value: float) -> str:
    """Time: '444 µs', '18.6 ms', '1.23 s', '85 ns'."""
    if missing(value):
        return DASH
    value = float(value)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(value) >= scale * 0.9995:
            return f"{sig(value / scale)} {unit}"
    return "0 s" if value == 0 else f"{sig(value / 1e-9)} ns"


def intensity(value: float) -> str:
    """FLOP/byte, 3 significant digits, whole numbers from 1,000 up ('1,215', '114', '0.999', '0')."""
    return sig(value, 4) if not missing(value) and abs(float(value)) >= 999.5 else sig(value)


def percent(fraction: float) -> str:
    """'72%', '0.5%', '<0.1%', '100%'."""
    if missing(fraction):
        return DASH
    value = float(fraction) * 100
    if value == 0:
        return "0%"
    if value < 0.1:
        return "<0.1%"
    if value < 10 and round(value) != value:
        return f"{value:.1f}%"
    return f"{value:.0f}%"


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
