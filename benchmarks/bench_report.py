"""Time to render every figure and every PDF of the default grid (config.yaml), in one process.

Run: python benchmarks/bench_report.py [config.yaml]   (prints a small table; not a test, timings vary by machine)
Tables come from the engine (roofline.pipeline.tables.grid_tables), as the pipeline's analyze jobs make them; the timed
parts are exactly what the figures, report and summary rules run. One process does everything serially, so the
sum is the CPU cost; Snakemake runs the per-model jobs in parallel (plus ~1 s of imports per job).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from roofline.figures import render_model_figures  # noqa: E402
from roofline.pipeline.config import resolve_config  # noqa: E402
from roofline.pipeline.tables import grid_tables  # noqa: E402
from roofline.report import load_manifest, model_context, summary_context, write_report  # noqa: E402


def main(config_path: Path) -> None:
    resolved = resolve_config(yaml.safe_load(config_path.read_text()), base_dir=ROOT)
    specs = resolved.specs()
    start = time.perf_counter()
    tables = grid_tables(resolved.models.values(), resolved.gpus.values(), resolved.stages, resolved.scenario,
                         resolved.plans)
    t_tables = time.perf_counter() - start
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        reports = Path(tmp)
        for model in resolved.models:
            figures = reports / "figures" / model
            start = time.perf_counter()
            manifest = render_model_figures(model, tables["ops"], tables["sweeps"], specs, figures)
            t_fig = time.perf_counter() - start
            start = time.perf_counter()
            context = model_context(model, tables, specs, load_manifest(figures), f"figures/{model}")
            write_report(context, reports / f"{model}.html", reports / f"{model}.pdf")
            t_pdf = time.perf_counter() - start
            rows.append((model, len(manifest), t_fig, t_pdf))
        start = time.perf_counter()
        write_report(summary_context(tables, specs), reports / "summary.html", reports / "summary.pdf")
        t_summary = time.perf_counter() - start
    print(f"grid: {len(resolved.models)} models x {len(resolved.gpus)} GPUs x {len(resolved.stages)} stages "
          f"(tables in {t_tables:.1f} s)")
    print(f"{'model':<16}{'figures':>8}{'figures s':>11}{'HTML+PDF s':>12}")
    for model, n, t_fig, t_pdf in rows:
        print(f"{model:<16}{n:>8}{t_fig:>11.1f}{t_pdf:>12.1f}")
    total_fig = sum(r[2] for r in rows)
    total_pdf = sum(r[3] for r in rows) + t_summary
    print(f"{'summary':<16}{'':>8}{'':>11}{t_summary:>12.1f}")
    print(f"{'total':<16}{sum(r[1] for r in rows):>8}{total_fig:>11.1f}{total_pdf:>12.1f}"
          f"   all: {total_fig + total_pdf:.1f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "config.yaml")
