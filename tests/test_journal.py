"""The journal on its own: header, fsync'd appends, and refusal to overwrite."""

import pytest

from manibo.journal import Evaluation, Journal, JournalError


def test_round_trip(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.write_header({"seed": 3})
    journal.append(Evaluation(x=[1.0, 0.0], y=2.5, index=0))
    journal.append(Evaluation(x=[0.0, 1.0], y=None, status="failed", error="boom", index=1))
    config, evaluations = journal.read()
    assert config == {"seed": 3}
    assert [e.y for e in evaluations] == [2.5, None] and evaluations[1].error == "boom"
    with pytest.raises(JournalError, match="already exists"):
        journal.write_header({})


def test_missing_header(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"type": "evaluation", "x": [1.0], "y": 1.0}\n')
    with pytest.raises(JournalError, match="header"):
        Journal(path).read()
