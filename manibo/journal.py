"""The append-only JSON-lines journal of an optimisation run.

Every record is on disk before ``tell`` returns.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from manibo.exceptions import ManiboError, ManiboWarning

JOURNAL_VERSION = 1


class JournalError(ManiboError):
    """A journal cannot be read.

    A record other than the last is corrupt, or the header is missing.
    """


class JournalWarning(ManiboWarning):
    """A truncated or corrupt last journal line was skipped (it is kept beside the journal)."""


@dataclass
class Evaluation:
    """One told evaluation.

    Attributes:
        x: the point, as nested lists in ambient coordinates (``point_shape``).
        y: the observed value, or None when the evaluation failed.
        status: ``"ok"`` or ``"failed"``.
        error: the error message of a failed evaluation.
        index: position in the run (0-based).
        seconds: wall time of the evaluation when known.
    """

    x: list
    y: float | None
    status: str = "ok"
    error: str | None = None
    index: int = 0
    seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Journal:
    """Append-only JSON-lines file.

    One header line (the configuration), then one line per evaluation.

    Args:
        path: the file; created with its header when it does not exist.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def write_header(self, config: dict[str, Any]) -> None:
        """Create the journal with its header; refuses to overwrite an existing journal."""
        if self.path.exists() and self.path.stat().st_size > 0:
            raise JournalError(
                f"journal {self.path} already exists; continue it with "
                "`BayesianOptimizer.resume(path)` or choose another path."
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._append({"type": "header", "version": JOURNAL_VERSION, "config": config})

    def append(self, evaluation: Evaluation) -> None:
        """Append one evaluation and force it to disk (flush + fsync) before returning."""
        self._append({"type": "evaluation", **asdict(evaluation)})

    def _append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, allow_nan=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> tuple[dict[str, Any], list[Evaluation]]:
        """Read the header's configuration and the evaluations.

        A corrupt or truncated *last* line (a crash in the middle of a write) is moved to
        ``<path>.corrupt`` and reported with a :class:`JournalWarning`; a corrupt earlier line
        raises :class:`JournalError`, because skipping it would silently lose a record.
        """
        if not self.path.exists():
            raise JournalError(f"journal {self.path} does not exist.")
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        complete, tail = lines[:-1], lines[-1]  # `tail` is b"" when the file ends with a newline
        records = []
        for number, line in enumerate(complete, start=1):
            try:
                records.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                if number == len(complete) and not tail:
                    self._quarantine(raw, len(raw) - len(line) - 1, f"line {number}: {err}")
                    break
                raise JournalError(
                    f"journal {self.path} line {number} is corrupt ({err}); "
                    "earlier and later records are intact. "
                    "Repair or remove that line by hand, then resume."
                ) from err
        if tail:
            self._quarantine(raw, len(raw) - len(tail), "the last line is truncated (no newline)")
        if not records or records[0].get("type") != "header":
            raise JournalError(
                f"journal {self.path} has no header line; it was not written by manibo."
            )
        evaluations = [
            Evaluation(**{k: v for k, v in r.items() if k != "type"})
            for r in records[1:]
            if r.get("type") == "evaluation"
        ]
        return records[0]["config"], evaluations

    def _quarantine(self, raw: bytes, keep: int, why: str) -> None:
        corrupt = self.path.with_name(self.path.name + ".corrupt")
        corrupt.write_bytes(raw[keep:])
        with open(self.path, "r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        warnings.warn(
            f"journal {self.path}: {why}; it was skipped and saved to {corrupt}. "
            "All earlier records were kept.",
            JournalWarning,
            stacklevel=3,
        )
