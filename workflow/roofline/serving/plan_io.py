"""The plan table as parquet: its typed schema and the `reason` metadata key that says why it has no rows."""
from __future__ import annotations

from ..engine.columns import COST_COLUMNS, PLAN_COLUMNS, PLAN_TABLE_EXTRA_COLUMNS

TEXT_COLUMNS = ("model", "gpu", "weight_dtype", "act_dtype", "kv_dtype", "attention", "bound", "estimate", "framework",
                "calibration", "deployment", "energy_basis")
COUNT_COLUMNS = ("devices", "tp", "pp", "ep", "batch", "isl", "osl", "seq_len")


def plan_arrow_table(rows: list[dict], reason: str):
    """A pyarrow table of roofline.serving.planner.plan_table's rows with their cost (roofline.serving.cost:
    PLAN_COLUMNS + COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS, typed even when empty) with `reason` (why there are no
    rows) in its metadata."""
    import pyarrow as pa

    flags = ("attention_dp", "fits") + PLAN_TABLE_EXTRA_COLUMNS
    schema = pa.schema([(name, pa.string() if name in TEXT_COLUMNS else pa.bool_() if name in flags
                         else pa.int64() if name in COUNT_COLUMNS else pa.float64())
                        for name in PLAN_COLUMNS + COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS])
    return pa.Table.from_pylist(rows, schema=schema).replace_schema_metadata({"reason": reason})


def read_plan_table(path: str):
    """(DataFrame, reason) of a results/plans/{model}.parquet file."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return table.to_pandas(), (table.schema.metadata or {}).get(b"reason", b"").decode()
