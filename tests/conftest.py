"""Shared fixtures: a tiny model whose costs can be computed by hand."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))  # works without `pip install -e`

from roofline.engine.models import ModelSpec  # noqa: E402


@pytest.fixture
def tiny():
    """2 layers, D=8, H=2 query heads, Hkv=1 KV head (GQA/MQA), d=4, SwiGLU F=16, V=32, untied, RMSNorm."""
    return ModelSpec(key="tiny", name="tiny", family="llama", n_layers=2, hidden=8, n_heads=2, n_kv_heads=1,
                     head_dim=4, intermediate=16, vocab=32).validate()
