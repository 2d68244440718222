"""The examples timer runs examples at smoke size, records each, and its table renders."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import doc_tables  # noqa: E402
import examples_time  # noqa: E402


def test_examples_time_smoke_records_an_example(tmp_path):
    # the timer in this process; it runs the example in a fresh one
    options = ["--smoke", "--out", str(tmp_path), "--only", "kernels_on_every_space"]
    assert examples_time.main(options) == 0
    data = json.loads((tmp_path / "examples.json").read_text())
    assert data["config"] == {"smoke": True, "threads": 1, "timeout_s": 3600.0}
    assert "torch" in data["environment"]["versions"]
    (record,) = data["examples"]
    assert record["name"] == "kernels_on_every_space" and record["passed"] is True
    assert record["seconds"] > 0 and record["error"] is None
    assert record["summary"] == (
        "one Matérn kernel class on the sphere, circle, torus, SO(3), Gr(2, 4), a mesh, a graph."
    )
    assert any(line.startswith("globe S²") for line in record["output"])
    rendered = doc_tables.examples_table(data)
    assert rendered.startswith("At smoke size, one example at a time, 1 BLAS thread each, on ")
    assert "| [kernels_on_every_space.py](../examples/kernels_on_every_space.py) |" in rendered


def test_records_merge_and_a_failing_example_fails_the_run(tmp_path, monkeypatch):
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "fine.py").write_text('"""Tutorial: a fine example."""\nprint("all good")\n')
    (examples / "broken.py").write_text('"""A broken example."""\nassert 1 == 2\n')
    monkeypatch.setattr(examples_time, "EXAMPLES", examples)
    out = ["--out", str(tmp_path / "out"), "--smoke"]
    assert examples_time.main([*out, "--only", "fine"]) == 0
    assert examples_time.main([*out, "--only", "broken"]) == 1  # kept: fine's record
    data = json.loads((tmp_path / "out" / "examples.json").read_text())
    broken, fine = data["examples"]
    assert fine["passed"] is True and fine["output"] == ["all good"]
    assert fine["summary"] == "a fine example."
    assert broken["passed"] is False and broken["returncode"] == 1
    assert broken["summary"] == "A broken example." and broken["error"][-1] == "AssertionError"
    rendered = doc_tables.examples_table(data)
    assert "| **failed** (exit 1) |" in rendered and rendered.count("| passed |") == 1
    # a run at another size starts afresh instead of mixing records
    assert examples_time.main(["--out", str(tmp_path / "out"), "--only", "fine"]) == 0
    data = json.loads((tmp_path / "out" / "examples.json").read_text())
    assert [r["name"] for r in data["examples"]] == ["fine"] and not data["config"]["smoke"]
