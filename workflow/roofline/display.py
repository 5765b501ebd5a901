"""How numbers are shown to people: one formatter for figures and report, so a legend and a table print the same
value the same way (1307e12 FLOP/s is '1,310 TFLOP/s' in both). Display only: tables keep SI base units.

Imports nothing from the package (figures and report both import it; neither imports the other).
"""
from __future__ import annotations

import math

#: integer dtypes: their peaks and rates are operations (TOP/s), not floating-point operations (TFLOP/s)
INT_DTYPES = ("int8", "int4")


def is_integer(dtype: str | None) -> bool:
    """Whether `dtype` is an integer type (its rates print as TOP/s)."""
    return bool(dtype) and str(dtype) in INT_DTYPES


#: outside [SMALL, LARGE) a number is written as mantissa × 10^n (only extreme specs get there)
SMALL, LARGE = 1e-4, 1e9
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(exponent: int) -> str:
    """'10¹⁵', '10⁻⁷'."""
    return "10" + str(int(exponent)).translate(_SUPERSCRIPT)


def sig(value: float, digits: int = 3) -> str:
    """`digits` significant digits, thousands separated: 1215.3 -> '1,215' (digits 4), 1307.4 -> '1,310',
    0.0123 -> '0.0123', 3.35 -> '3.35'; no exponent noise, except that extreme values stay short:
    1e15 -> '1.00×10¹⁵', 2e-7 -> '2.00×10⁻⁷'. Minus signs are typographic (U+2212)."""
    value = float(value)
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "∞" if value > 0 else "−∞"
    value = float(f"{value:.{digits}g}")  # round first: 0.9996 -> 1.00, not 1.000
    magnitude = math.floor(math.log10(abs(value)))
    if not SMALL <= abs(value) < LARGE:
        mantissa = value / 10.0 ** magnitude
        text = f"{mantissa:.{digits - 1}f}×{power_of_ten(magnitude)}"
        return text.replace("-", "−", 1) if value < 0 else text
    decimals = max(digits - 1 - magnitude, 0)
    return f"{value:,.{decimals}f}".replace("-", "−")


PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def prefixed(value: float, unit: str, digits: int = 3) -> str:
    """Value with a decimal SI prefix: prefixed(6.87e10, 'FLOP') -> '68.7 GFLOP', prefixed(3.35e12, 'B/s') ->
    '3.35 TB/s'."""
    value = float(value)
    if value == 0:
        return f"0 {unit}"
    for scale, prefix in PREFIXES:
        if abs(value) >= scale * 0.9995:
            return f"{sig(value / scale, digits)} {prefix}{unit}"
    return f"{sig(value, digits)} {unit}"


def bandwidth(bytes_per_s: float) -> str:
    """Memory bandwidth: '768 GB/s', '3.35 TB/s'."""
    return prefixed(bytes_per_s, "B/s")


def rate_unit(dtype: str | None = None) -> str:
    """'TOP/s' for integer dtypes, else 'TFLOP/s'."""
    return "TOP/s" if is_integer(dtype) else "TFLOP/s"


def tera_rate(flops_per_s: float, dtype: str | None = None) -> str:
    """A peak or attainable rate in tera-units: '989 TFLOP/s', '1,980 TOP/s' (int8)."""
    return f"{sig(float(flops_per_s) / 1e12)} {rate_unit(dtype)}"


def seconds(value: float) -> str:
    """Time: '444 µs', '18.6 ms', '1.23 s', '85 ns'."""
    value = float(value)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(value) >= scale * 0.9995:
            return f"{sig(value / scale)} {unit}"
    return "0 s" if value == 0 else f"{sig(value / 1e-9)} ns"


def weights_label(scenario: dict) -> str:
    """The weights' dtypes of a scenario dict: 'fp16', 'fp16, experts mxfp4' (gpt-oss's native checkpoint),
    'nvfp4, attention bf16' or 'fp8 (block scales)' (fp8_scaling block: DeepSeek-V3's native checkpoint)."""
    label = scenario["weight_dtype"]
    if label == "fp8" and scenario.get("fp8_scaling") == "block":
        label += " (block scales)"
    for part in ("expert", "attention"):
        if scenario.get(f"{part}_weight_dtype"):
            label += f", {part if part == 'attention' else 'experts'} {scenario[f'{part}_weight_dtype']}"
    return label
