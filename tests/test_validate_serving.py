"""benchmarks/validate_serving.py's reading of the measured runs (the parts that need no aiconfigurator-core)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import validate_serving  # noqa: E402


def test_replicas_count_an_engines_batch_over_its_attention_ranks():
    # The package records a run's batch per replica, and under data-parallel attention per attention rank:
    # DeepSeek-R1 on 8 B200s, DEP 8, 256 client users, batch 32 = 8 ranks x 32, one engine (it had been taken for
    # 8 replicas of the 8-GPU engine, each serving 32 users); 512 users at batch 32 on DEP 8 are 2 engines;
    # Llama at TP 2, 416 users, batch 13: 32 replicas; a batch that does not divide the users: one engine; a
    # disaggregated run: its pools, never replicas
    runs = pd.DataFrame({"mode": ["agg", "agg", "agg", "agg", "disagg"],
                         "concurrency": [256.0, 512.0, 416.0, 100.0, 64.0],
                         "batch_size": [32.0, 32.0, 13.0, 48.0, 8.0],
                         "attention_dp_size": [8.0, 8.0, np.nan, 1.0, 8.0]})
    assert validate_serving.replicas(runs).tolist() == [1.0, 2.0, 32.0, 1.0, 1.0]
