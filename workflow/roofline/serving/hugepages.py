"""Large temporary arrays without transparent-huge-page advice, for the searches (a measured fix, not a tuning knob).

NumPy advises the kernel (madvise MADV_HUGEPAGE) to back every array of 4 MiB or more with huge pages. Where the
kernel's THP `defrag` setting is `madvise` (a common default), a fault in such an array compacts memory on the spot
to find a free 2 MiB page. A search allocates and frees hundreds of such arrays (its stacked step tables and the
columns of millions of points), and on a 2-core VM that compaction took most of its time: the default Qwen3-30B-A3B
search spent 7.6 s of 20 s in the kernel, 4.0 s of it building the stacked step tables, and 1.4 s with the advice
off (benchmarks/bench_plan.py). The searches turn the advice off while they run and restore it after; nothing else
changes (same arrays, same results).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


def _switch():
    """NumPy's setter of the advice (returns the previous setting), or None where this NumPy has none."""
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    return getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)


@contextmanager
def without_hugepage_advice() -> Iterator[None]:
    """Allocate arrays without the huge-page advice inside the block; the previous setting is restored after."""
    switch = _switch()
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)
