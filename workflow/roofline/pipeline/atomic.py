"""Atomic outputs and per-rule logs: what every pipeline writer uses, so that a failed or interrupted job leaves no
half-written file behind and its log says what happened."""
from __future__ import annotations

import os
import traceback
import uuid
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def log_to(log: str | Path | None):
    """Yield a function that appends a line to `log`; on error, write the traceback there and re-raise."""
    lines: list[str] = []
    try:
        yield lines.append
    except BaseException:
        lines.append(traceback.format_exc())
        raise
    finally:
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            Path(log).write_text("".join(line if line.endswith("\n") else line + "\n" for line in lines))


@contextmanager
def atomic(paths: Iterable[str | Path]):
    """Yield {path: temporary path}; rename all temporaries into place on success, delete them on error."""
    targets = [Path(p) for p in paths]
    token = uuid.uuid4().hex[:12]
    temps = {str(p): p.with_name(f".{p.name}.{token}.tmp") for p in targets}
    try:
        for temp in temps.values():
            temp.parent.mkdir(parents=True, exist_ok=True)
        yield temps
        for final, temp in temps.items():
            os.replace(temp, final)
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
