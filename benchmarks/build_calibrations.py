"""Rebuild every shipped calibration table (workflow/roofline/data/calibrations/) in one command.

    pip install -e '.[aic]' && python benchmarks/build_calibrations.py [--data ../shared/data/measured]

1. From the installed `aiconfigurator-core` (roofline.estimate.aic_import, what `roofline calibrate --from
   aiconfigurator` runs): every catalog device it covers under every framework it measured. The device's default
   framework is the one whose tables cover the most curve keys (op class x dtype x operand dtype x phase, and
   collectives x GPU count; a GEMM dtype left out as timed at a fallback tactic, aic_gemm.UNTUNED, counts: it was
   measured, and lookups answer it from another framework's table); another framework's table is shipped too when
   the expected time of a reference step (REFERENCE) differs from the default's by more than MATERIAL.
2. vidur's A100 and H100 norms, element-wise kernels and embeddings (`{gpu}.vidur.csv`: what the package does not
   measure), rebuilt from --data when it holds vidur's files, else kept as committed; the H200's measured ceilings
   (h200_ceilings.csv) appended to its default table.
3. The fit of each table on its catalog device (`.fit.npz`), the pooled fallback's (`pooled.fit.npz`) and
   manifest.json (device -> framework -> file, package and framework versions, default framework).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from roofline.engine import models  # noqa: E402
from roofline.engine.analysis import prepare  # noqa: E402
from roofline.engine.graph import build_operators  # noqa: E402
from roofline.engine.hardware import catalog  # noqa: E402
from roofline.engine.parallel import Parallel  # noqa: E402
from roofline.engine.scenario import Scenario  # noqa: E402
from roofline.estimate import aic_source as src  # noqa: E402
from roofline.estimate import calibration as cal  # noqa: E402
from roofline.estimate import lookup  # noqa: E402
from roofline.estimate.aic_gemm import untuned_left_out  # noqa: E402
from roofline.estimate.aic_import import import_tables, write_table  # noqa: E402
from roofline.estimate.curves import Fit  # noqa: E402
from roofline.estimate.step import Kernels  # noqa: E402

OUT = ROOT / "workflow" / "roofline" / "data" / "calibrations"
#: another framework's table ships when a reference step's expected time differs from the default's by more
MATERIAL = 0.10
#: (model, stage, scenario) of the reference steps (decode at seq 2048; prefill of 2048 tokens)
REFERENCE = (
    ("llama-3.1-8b", "decode", Scenario(batch=1, seq_len=2048, weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16")),
    ("llama-3.1-8b", "decode", Scenario(batch=64, seq_len=2048, weight_dtype="bf16", act_dtype="bf16",
                                        kv_dtype="bf16")),
    ("llama-3.1-8b", "decode", Scenario(batch=16, seq_len=2048, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")),
    ("llama-3.1-8b", "prefill", Scenario(batch=1, seq_len=2048, weight_dtype="bf16", act_dtype="bf16",
                                         kv_dtype="bf16")),
    ("qwen3-30b-a3b", "decode", Scenario(batch=16, seq_len=2048, weight_dtype="bf16", act_dtype="bf16",
                                         kv_dtype="bf16")),
    ("llama-3.1-70b", "decode", Scenario(batch=32, seq_len=2048, weight_dtype="bf16", act_dtype="bf16",
                                         kv_dtype="bf16", parallel=Parallel(tp=4))),
)
VIDUR_CLASSES = ("norm", "elementwise", "embedding")


def coverage(fit: Fit) -> int:
    return len(fit.grids) + len(fit.comm)


def reference_steps(key: str, fit: Fit, framework: str) -> list[float]:
    """Expected times of the REFERENCE steps on device `key` from `fit` (NaN where the device cannot run one)."""
    gpu = catalog()[key]
    calibration = lookup.Calibration(fit, Fit(), True, 0.0, framework, "")  # no fallback: the table alone
    out = []
    for model_key, stage, scenario in REFERENCE:
        model = models.catalog()[model_key]
        try:
            scenario = prepare(model, gpu, stage, scenario)
        except Exception:  # noqa: BLE001 - a device without the dtype's peak or the memory: no reference
            out.append(float("nan"))
            continue
        kernels = Kernels(model, scenario, stage, build_operators(model, stage, scenario), framework)
        out.append(float(kernels.step(calibration, gpu)[0][0]))
    return out


def differs(steps: list[float], default: list[float]) -> bool:
    return any(abs(a / b - 1) > MATERIAL for a, b in zip(steps, default) if a == a and b == b)


def build_device(key: str, data: Path | None) -> dict:
    """Import, fit and choose; write the shipped tables of one device; its manifest entry."""
    name = src.SYSTEMS[key]
    built = {}
    for framework in src.FRAMEWORKS:
        if not src.framework_versions(name, framework):
            continue
        rows, text = import_tables(key, framework)
        print(text)
        if rows:
            version = src.pick_version(name, framework, None)
            untuned = untuned_left_out(src.table_dir(name, "gemm", framework, version), framework, key)
            built[framework] = (rows, cal.fit_rows(rows, catalog()[key]), version, untuned)
    default = max(built, key=lambda fw: (coverage(built[fw][1]) + built[fw][3], fw == "trtllm"))
    steps = {fw: reference_steps(key, fit, fw) for fw, (_, fit, _, _) in built.items()}
    shipped = [default] + [fw for fw in built if fw != default]
    for fw in shipped[1:]:
        gaps = [abs(a / b - 1) for a, b in zip(steps[fw], steps[default]) if a == a and b == b]
        print(f"  {fw} against {default}: reference steps differ by up to {max(gaps, default=0):.0%}")
    print(f"{key}: default {default} (coverage " + ", ".join(f"{fw} {coverage(built[fw][1])}" for fw in built)
          + f"); shipped {', '.join(shipped)}")
    entry = {"default": default, "tables": {}}
    for framework in shipped:
        rows, fit, version, _ = built[framework]
        if key == "h200-sxm" and framework == default:
            rows = rows + h200_ceilings(data)
        path = OUT / f"{key}.{framework}.csv.gz"
        write_table(rows, path)
        cal.save_fit(path, catalog()[key], [r for r in cal.read_table(str(path))])
        entry["tables"][framework] = {"file": path.name, "framework_version": version,
                                      "source": f"{src.PACKAGE} {src.package_version()}, {framework} {version}",
                                      "rows": len(rows), "coverage": coverage(fit)}
    return entry


def h200_ceilings(data: Path | None) -> list[dict]:
    """The H200's measured ceilings (copy/read bandwidth, square matmuls): from --data, else the committed ones."""
    committed = [r for r in _rows(OUT / "h200-sxm.trtllm.csv.gz") if r["op_class"] == cal.CEILING]
    if data is None or not (data / "h200_ceilings.csv").is_file():
        return committed
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from build_vidur import h200_ceiling_rows  # the vidur-era builder keeps the ceiling parser

    return h200_ceiling_rows(data)[0]


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with gzip.open(path, "rt", newline="") as handle:
        return list(csv.DictReader(handle))


def vidur_tables(data: Path | None) -> None:
    """{gpu}.vidur.csv: vidur's norms, element-wise kernels and embeddings (rebuilt from --data if present)."""
    for key in cal.FALLBACK_TABLES:
        path = OUT / f"{key}.vidur.csv.gz"
        if data is not None and (data / "llama2-7b_ops_measured.csv").is_file():
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from build_vidur import vidur_rows

            rows = [r for r in vidur_rows(data)[key] if r["op_class"] in VIDUR_CLASSES]
            write_table([{**dict.fromkeys(cal_columns(), 0), "framework": "", "weight_dtype": "", "kv_dtype": "",
                          "span": 1, **r} for r in rows], path)
        if path.is_file():
            cal.save_fit(path, catalog()[key])


def refit() -> None:
    """The fits of every shipped table and the pooled fallback, from the tables as committed."""
    for key, entry in cal.manifest()["devices"].items():
        for table in entry["tables"].values():
            cal.save_fit(OUT / table["file"], catalog()[key])
            print(f"refitted {table['file']}")
    for key in cal.FALLBACK_TABLES:
        cal.save_fit(OUT / f"{key}.vidur.csv.gz", catalog()[key])
    lookup.pooled.cache_clear()
    lookup.fit_pooled().save(OUT / lookup.POOLED_FIT)


def cal_columns():
    from roofline.engine.columns import CALIBRATION_COLUMNS

    return CALIBRATION_COLUMNS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "measured")
    parser.add_argument("--devices", nargs="+", default=list(src.SYSTEMS), help="catalog keys (default: all)")
    parser.add_argument("--fits-only", action="store_true", help="refit the shipped tables as they are (after a "
                                                                   "change of the estimator), import nothing")
    args = parser.parse_args()
    if args.fits_only:
        refit()
        return
    data = args.data if args.data.is_dir() else None
    OUT.mkdir(parents=True, exist_ok=True)
    vidur_tables(data)
    path = OUT / "manifest.json"
    manifest = json.loads(path.read_text()) if path.is_file() else {"devices": {}}
    for key in args.devices:
        manifest["devices"][key] = build_device(key, data)
    manifest.update(package=src.PACKAGE, version=src.package_version(), licence="Apache-2.0",
                    fallback=list(cal.FALLBACK_TABLES))
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    cal.manifest.cache_clear()
    lookup.pooled.cache_clear()
    lookup.fit_pooled().save(OUT / lookup.POOLED_FIT)
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {path.relative_to(ROOT)}; {OUT.relative_to(ROOT)} holds {total / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
