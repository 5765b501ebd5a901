"""The plan table as parquet: its typed schema, the `reason` metadata key that says why it has no rows, and the
`search` key that says what was searched (workload, targets, candidate devices' names, mode, framework, dtypes), so
that what reads the table (figures, report, served predictions) needs nothing else."""
from __future__ import annotations

import json

from ..engine.columns import COST_COLUMNS, PLAN_COLUMNS, PLAN_SERVING_COLUMNS, PLAN_TABLE_EXTRA_COLUMNS
from .candidates import served_kv_dtypes

TEXT_COLUMNS = ("model", "gpu", "weight_dtype", "act_dtype", "kv_dtype", "attention", "bound", "estimate", "framework",
                "calibration", "deployment", "energy_basis", "mode", "limited_by", "spec_method",
                "attention_weight_dtype", "fp8_scaling", "attention_dp_balance", "batch_wait")
COUNT_COLUMNS = ("devices", "tp", "pp", "ep", "batch", "isl", "osl", "seq_len", "prefill_workers", "prefill_tp",
                 "prefill_pp", "prefill_ep", "decode_workers")
FLAGS = ("attention_dp", "fits", "prefill_attention_dp") + PLAN_TABLE_EXTRA_COLUMNS


def plan_columns(served: bool) -> tuple[str, ...]:
    """The plan table's columns: PLAN_COLUMNS (+ PLAN_SERVING_COLUMNS for the serving model's search) +
    COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS."""
    return PLAN_COLUMNS + (PLAN_SERVING_COLUMNS if served else ()) + COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS


def plan_arrow_table(rows: list[dict], reason: str, search: dict | None = None):
    """A pyarrow table of the plan rows with their cost (roofline.serving.cost; plan_columns(), typed even when
    empty), `reason` (why there are no rows) and `search` (what was searched: search_metadata) in its metadata.
    The serving model's columns are kept when `search` names a mode."""
    import pyarrow as pa

    served = bool((search or {}).get("mode"))
    schema = pa.schema([(name, pa.string() if name in TEXT_COLUMNS else pa.bool_() if name in FLAGS
                         else pa.int64() if name in COUNT_COLUMNS else pa.float64())
                        for name in plan_columns(served)])
    metadata = {"reason": reason, "search": json.dumps(search or {}, sort_keys=True)}
    return pa.Table.from_pylist(rows, schema=schema).replace_schema_metadata(metadata)


def search_metadata(settings) -> dict:
    """What a plan table was searched with (roofline.serving.planner.PlanSettings): the workload with its targets
    (isl, osl, tpot_s, ttft_s; None = no target), the candidate devices as (key, display name), mode (None: the
    step model), framework, what the frontier was ranked on (rank_on) and the dtypes searched: the step model's
    `dtypes`, or the serving model's recipe (weight_dtypes and kv_dtypes as searched; attention_weight_dtype;
    fp8_scaling)."""
    w = settings.workload
    searched = {"dtypes": list(settings.dtypes)} if settings.mode is None else {
        "weight_dtypes": list(settings.weight_dtypes or settings.dtypes),
        "kv_dtypes": list(settings.kv_dtypes or served_kv_dtypes(settings.dtypes)),
        "attention_weight_dtype": settings.attention_weight_dtype, "fp8_scaling": settings.fp8_scaling}
    return {"workload": {"isl": w.isl, "osl": w.osl, "tpot_s": w.tpot_s, "ttft_s": w.ttft_s},
            "names": [[gpu.key, gpu.name] for gpu in settings.gpus], "mode": settings.mode,
            "framework": settings.framework, "rank_on": getattr(settings, "rank_on", "expected"), **searched}


def read_plan_table(path: str):
    """(DataFrame, reason) of a results/plans/{model}.parquet file."""
    table, reason, _ = read_plan_search(path)
    return table, reason


def read_plan_search(path: str):
    """(DataFrame, reason, search) of a results/plans/{model}.parquet file (search: search_metadata's dict, {} for
    a table written without it)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    metadata = table.schema.metadata or {}
    return (table.to_pandas(), metadata.get(b"reason", b"").decode(),
            json.loads(metadata.get(b"search", b"{}").decode() or "{}"))
