"""Catalog values re-checked against their sources, and config-entry resolution."""
import csv
from importlib import resources

import pytest

from roofline.engine import hardware, models
from roofline.engine.errors import RooflineInputError


def test_every_csv_device_is_in_the_catalog_with_decimal_units():
    with resources.files("roofline").joinpath("data/accelerators.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 37 and set(hardware.catalog()) == {r["key"] for r in rows}  # 30 + 7 of issue 11
    for row in rows:
        gpu = hardware.get_accelerator(row["key"])
        assert gpu.bandwidth_bytes_per_s == float(row["mem_bandwidth_GBps"]) * 1e9
        if row["fp16_tflops"]:
            assert gpu.peak("fp16") == float(row["fp16_tflops"]) * 1e12


@pytest.mark.parametrize("key, dtype, tflops, gbps", [
    ("rtx-a6000", "fp16", 154.8, 768), ("h100-sxm", "bf16", 989.4, 3350), ("a100-sxm-80gb", "bf16", 312, 2039),
    ("h200-sxm", "fp8", 1978.9, 4800), ("mi300x", "fp16", 1307.4, 5300), ("l40s", "fp16", 362.05, 864),
])
def test_datasheet_values(key, dtype, tflops, gbps):
    gpu = hardware.get_accelerator(key)
    assert gpu.peak(dtype) == tflops * 1e12 and gpu.bandwidth_bytes_per_s == gbps * 1e9


def test_capacity_is_the_printed_number_for_every_vendor_and_estimates_are_marked():
    # NVIDIA prints "80 GB", Google "32 GiB": both are binary sizes in fact; both are read as printed x 2**30 bytes
    # (an H100 80GB holds 81920 MiB, of which nvidia-smi shows 81559 MiB after the driver's reserve)
    assert hardware.get_accelerator("tpu-v4").memory_bytes == 32 * 2**30 == 34_359_738_368
    assert hardware.get_accelerator("h100-sxm").memory_bytes == 80 * 2**30
    assert hardware.get_accelerator("h100-nvl").estimate and hardware.get_accelerator("b200").estimate
    assert not hardware.get_accelerator("h100-sxm").estimate
    # an estimated L2 size alone (H200: "L2 50 MB assumed") does not make the device's roofline an estimate
    assert not hardware.get_accelerator("h200-sxm").estimate and not hardware.get_accelerator("m4-max").estimate


def test_entry_override_and_new_device():
    a100 = hardware.accelerator_from_entry("a100-sxm-80gb", {"bandwidth_gbps": 1935})
    assert a100.bandwidth_bytes_per_s == 1935e9 and a100.peak("bf16") == 312e12
    acme = hardware.accelerator_from_entry("acme-x1", {"name": "ACME X1", "memory_gb": 96, "bandwidth_gbps": 4000,
                                                       "peak_tflops": {"bf16": 1200, "fp8": 2400}})
    assert acme.ridge("bf16") == 300 and acme.memory_bytes == 96 * 2**30  # memory_gb is read as GiB, like the catalog


@pytest.mark.parametrize("key, entry, message", [
    ("h100-sxn", {}, "did you mean 'h100-sxm'"),
    ("h100-sxm", {"bandwidth_gbps": -1}, "gpus.h100-sxm.bandwidth_gbps: -1 is not allowed"),
    ("h100-sxm", {"peak_tflops": {"fp9": 1}}, "did you mean 'fp8'"),
    ("h100-sxm", {"bandwith_gbps": 1}, "did you mean 'bandwidth_gbps'"),
    ("acme-x1", {"memory_gb": 96}, "needs bandwidth_gbps, peak_tflops"),
])
def test_bad_entries(key, entry, message):
    with pytest.raises(RooflineInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        hardware.accelerator_from_entry(key, entry)


def test_every_catalog_family_has_one_hf_reader_entry():
    from roofline.engine.hf_families import FAMILIES, FAMILY_ALIASES

    assert {m.family for m in models.catalog().values()} <= set(FAMILIES)
    assert set(FAMILY_ALIASES.values()) <= set(FAMILIES) and not set(FAMILY_ALIASES) & set(FAMILIES)
