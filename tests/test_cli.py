"""The command line: ``manibo info`` prints versions; unknown commands fail with usage."""

import pytest

from manibo.cli import main


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "manibo" in out and "torch" in out and "CUDA device" in out


def test_unknown_command():
    with pytest.raises(SystemExit):
        main(["frobnicate"])
