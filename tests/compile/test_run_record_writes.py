"""A run writes its record as it starts and once as it ends: the end's status, usage, the
rich per-task rows and the final context go to disk together (a process that dies between
two end writes cannot leave a record with half of them)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from learn_chain import chain

from prefect_folpipe.compile.report import _runs, read_record

pytestmark = pytest.mark.prefect


def test_a_short_run_writes_its_record_twice(tmp_path: Path, run: Any, monkeypatch) -> None:
    writes: Counter[str] = Counter()
    real = _runs.write_record

    def counting(path: Path, data: Any, **kwargs: Any) -> bool:
        writes[path.name] += 1
        return real(path, data, **kwargs)

    monkeypatch.setattr(_runs, "write_record", counting)
    monkeypatch.setattr(_runs, "PROGRESS_EVERY_S", 3600.0)  # no progress writes in between
    result = run(chain(tmp_path / "wf"))
    assert result.status == "completed"
    (name,) = writes
    assert writes[name] == 2
    record = read_record(tmp_path / "wf" / ".folpipe" / "runs" / name)
    assert record is not None and record["status"] == "completed"
    rows = {row["path"]: row for row in record["tasks"]}
    assert rows["draft"]["model_calls"] == 1 and "usage" in rows["draft"]
    assert record["final_context"]
