"""The append-only JSON-lines journal of an optimisation run: its schema, one writer, many readers.

A journal is one header line (format version and configuration) followed by one line per
evaluation and one per asked batch (the points ``ask`` handed out, written before it returns them,
so that a resumed run evaluates first the points asked and never told). The rules that make it
safe:

* **Readers never modify it.** A last line without its newline is read when it is a complete,
  valid record (an editor stripped the file's final newline), and is otherwise a write in progress
  (or cut off by a crash), ignored by :meth:`Journal.read`. The writer, under the lock, keeps such a
  record and writes the newline back.
* **One writer at a time.** :class:`JournalWriter` holds an operating-system lock on
  ``<journal>.lock`` (released when it closes or its process dies, even by ``SIGKILL``); a second
  writer gets :class:`JournalLockedError` naming the holder. A forked child (a worker of a process
  pool) closes its inherited copies of the lock and the journal, so that it keeps neither locked
  after its parent dies, and a write through an inherited writer is refused. The lock file sits
  beside the file the path resolves to, so a writer that opens the journal through a symbolic link
  takes the same lock. Where ``flock`` exists (not on Windows, whose locks would keep readers out)
  the writer also locks the journal file itself, so a writer through a hard link (another name,
  another lock file) is refused as well, once the journal exists. The lock file stays after the run,
  holding the last holder's process and host: it is the lock's anchor, not a sign of a running
  writer. Deleting it on close would let a writer that opened it just before lock a file no longer
  on disk while a third writer creates and locks a new one: two writers at once. It may be deleted
  safely while no run uses the journal. Only the lock holder repairs a cut-off last line (one that
  is not a complete, valid record), by moving it to a new ``<journal>.corrupt[.N]`` file (an earlier
  one is never overwritten), and only in a journal: a file whose first line is not a manibo header
  (or, with no complete line, does not begin like one) is refused untouched.
* **Appends are atomic and durable.** Each record is written by one ``os.write`` of the whole line
  on a file opened with ``O_APPEND``, then ``fsync``'d (and the folder is ``fsync``'d when the file
  is created). A failed write is cut back off the file, so a retry cannot duplicate a record.
* **A journal deleted or replaced during the run** is detected before every append and never
  recreated without its header.

Format versions (the header's ``version``). A version changes whenever a reader of the previous
one would misread or refuse what is written; a reader refuses versions it does not know, and a
writer appends to a journal in that journal's own version, so a file never mixes two.

* **4** (written by this version): format 3 and ``asked`` records, one per batch of points
  ``ask`` proposed. Asked lines are not evaluations: readers list them apart
  (:attr:`JournalContents.asked`).
* **3**: standard JSON, non-finite floats written as ``{"$float": "inf"}`` (``"-inf"``,
  ``"nan"``); evaluation records may carry ``proposal_seconds`` and ``elapsed``; ``stop`` records
  say why a run ended. Read by this version; resumed, it is appended to in format 3 (without
  asked records, so a run resumed from it in the middle of a batch proposes a new batch).
* **2**: non-finite floats as Python's non-standard ``Infinity``/``NaN`` tokens, no timing fields,
  no stop records. Read by this version; resumed, it is appended to in format 2.
* **1** (no content fingerprint of the space): refused; start a new run.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
import time
import warnings
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from manibo import _json
from manibo.exceptions import ManiboError, ManiboWarning

JOURNAL_VERSION = 4
"""Format of the journals this version creates (see the module's list of format versions)."""

READABLE_VERSIONS = (2, 3, 4)
"""Formats this version reads and appends to (each in its own format)."""

_EVALUATION_FIELDS = {
    2: {"type", "x", "y", "status", "error", "index", "seconds", "extra"},
    3: {"type", "x", "y", "status", "error", "index", "seconds", "extra"}
    | {"proposal_seconds", "elapsed"},
}
_EVALUATION_FIELDS[4] = _EVALUATION_FIELDS[3]
_STOP_FIELDS = {"type", "reason", "evaluations", "elapsed", "time"}
_ASKED_FIELDS = {"type", "step", "evaluations", "points", "proposal_seconds", "elapsed"}


class JournalError(ManiboError):
    """A journal cannot be read or written: wrong format, a malformed record, a missing file."""


class JournalTamperedError(JournalError):
    """The journal was deleted, replaced, cut or grown by another program during the run: this
    writer no longer writes to it."""


class JournalLockedError(JournalError):
    """Another process (or another optimiser in this one) is writing the journal."""


class JournalWriteError(JournalError):
    """Evaluations or asked points could not be written to the journal; they are kept in memory,
    and written by a later call once the journal can be written again, unless another program
    deleted, replaced, cut or grew it (the message then says so, and to tell ``history`` to a new
    optimiser with a new journal).

    Attributes:
        evaluations: the evaluations not yet on disk (each with its point ``x`` and value ``y``);
            empty when only asked points wait to be written.
        lines: the journal lines of ``evaluations`` (JSON text, without newlines), as the journal
            would have held them: a process that ends before they are written keeps them by
            appending these lines to the journal once it can be written.
    """

    def __init__(
        self, message: str, evaluations: list[Evaluation], lines: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.evaluations = evaluations
        self.lines = lines or []


def unwritten_lines_message(journal: Path, error: JournalWriteError, again: str) -> str:
    """What to do with the evaluations of ``error`` when nothing that holds them in memory will
    write them (the process ends, or the optimiser was closed): a sentence naming the journal and
    the cause, then how to keep them, then their journal lines in full, one a line, to append.

    Args:
        journal: the journal's path.
        error: the failed write (its cause is the ``OSError`` or the tampering).
        again: how the run is continued from its journal, as a verb phrase (``"run the same
            command again"``).
    """
    count = len(error.lines)
    message = f"the run stopped: could not write to journal {journal} ({error.__cause__ or error})."
    if not count:
        return f"{message} {again[:1].upper()}{again[1:]} once it can be written: it resumes.\n"
    lines = "".join(f"{line}\n" for line in error.lines)
    if isinstance(error.__cause__, JournalTamperedError):  # appending would corrupt another file
        return f"{message} The {count} evaluation(s) below are in no journal:\n{lines}"
    return (
        f"{message} {count} evaluation(s) are not in it: to keep them, once the journal can be "
        f"written, append the {count} line(s) below to it (save them in a file F, then "
        f"`cat F >> {journal}`) and {again}; it resumes from the journal (without them, from "
        f"the last evaluation written).\n{lines}"
    )


class JournalWarning(ManiboWarning):
    """A cut-off last journal line (a crash in the middle of a write) was moved aside."""


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
        extra: JSON values the caller attached with ``tell(..., extra=...)`` (or
            ``tell_failure``); empty otherwise.
        proposal_seconds: wall time of the ``ask`` that proposed the point, shared equally among
            the points it proposed (near 0 for the random initial design); None when the point
            was not asked (told directly) or the journal predates format 3.
        elapsed: seconds from the start of the run to the moment the evaluation was told, not
            counting time between a stop and a resume; None for journals of format 2.
    """

    x: list
    y: float | None
    status: str = "ok"
    error: str | None = None
    index: int = 0
    seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    proposal_seconds: float | None = None
    elapsed: float | None = None


@dataclass(frozen=True)
class Stop:
    """Why a run ended (a ``stop`` record, written after the evaluations of the run).

    Attributes:
        reason: ``"budget"`` (the number of evaluations asked for was reached),
            ``"max_seconds"`` (the wall-time budget was crossed) or ``"callback"`` (the
            callback asked to stop).
        evaluations: the number of evaluations in the journal when the run ended.
        elapsed: the run's clock at that moment (as :attr:`Evaluation.elapsed`).
        time: when, as ``YYYY-MM-DD HH:MM:SS UTC`` (now, unless given).
    """

    reason: str
    evaluations: int
    elapsed: float | None = None
    time: str = field(default_factory=lambda: _utc_now())


@dataclass(frozen=True)
class Asked:
    """A batch of points handed out by ``ask`` (an ``asked`` record, written before ``ask``
    returns them). A point is told when an evaluation of it follows; the others are evaluated
    first when the run is resumed.

    Attributes:
        step: the number of points asked or told before this batch (its proposals' seeds derive
            from it).
        evaluations: the number of evaluations in the journal when the batch was asked (the
            record follows exactly that many evaluation lines).
        points: the points, each as nested lists in ambient coordinates like
            :attr:`Evaluation.x`.
        proposal_seconds: the proposal time of each point (as :attr:`Evaluation.proposal_seconds`).
        elapsed: the run's clock when the batch was asked (as :attr:`Evaluation.elapsed`).
    """

    step: int
    evaluations: int
    points: list[list]
    proposal_seconds: list[float]
    elapsed: float | None = None


@dataclass(frozen=True)
class JournalContents:
    """Everything a journal holds.

    Attributes:
        version: the header's format version.
        config: the header's configuration.
        evaluations: the evaluations, in order.
        stops: the stop records, in order.
        asked: the asked records, in order (format 4; empty for older journals).
    """

    version: int
    config: dict[str, Any]
    evaluations: list[Evaluation]
    stops: list[Stop]
    asked: list[Asked] = field(default_factory=list)


class Journal:
    """Read access to a journal; reading never modifies the file.

    Args:
        path: the journal file (``~`` is expanded to the home folder).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()

    def read(self) -> tuple[dict[str, Any], list[Evaluation]]:
        """The header's configuration and the evaluations, every record checked.

        A last line without its newline is read when it is a complete, valid record (an editor
        stripped the newline), and ignored otherwise (being written, or cut off by a crash).

        Raises:
            JournalError: the file is missing, is not a manibo journal (its first line is not
                a header), has no header yet, has another format version, or a complete line is
                malformed (the message names the line and what is wrong).
        """
        contents = self.read_all()
        return contents.config, contents.evaluations

    def read_all(self) -> JournalContents:
        """The format version, the configuration, the evaluations and the stop records.

        Raises:
            JournalError: as :meth:`read`.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise JournalError(f"journal {self.path} does not exist.") from None
        except OSError as err:
            raise JournalError(f"cannot read journal {self.path}: {err}.") from err
        _check_is_journal(raw, self.path)
        complete = raw[: raw.rfind(b"\n") + 1]
        contents = None
        if raw[len(complete) :].strip():  # as the writer keeps it: a last line that lacks only
            try:  # its newline (an editor dropped it) counts; one being written is skipped
                contents = parse_records(raw + b"\n", self.path)
            except JournalError:
                pass
        if contents is None:
            contents = parse_records(complete, self.path)
        if contents is None:
            raise JournalError(
                f"journal {self.path} has no header line yet: the run that creates it has not "
                "written it (or was stopped before it did)."
            )
        return contents


def parse_records(complete: bytes, path: Path) -> JournalContents | None:
    """Parse and check complete journal lines; None when there are none.

    Args:
        complete: the file's bytes up to and including its last newline (of a file that passed
            :func:`_check_is_journal`, as its two readers check first).
        path: the journal's path, for messages.
    """
    lines = complete.split(b"\n")[:-1]
    if not lines:
        return None
    records = [_decode(line, number, path) for number, line in enumerate(lines, start=1)]
    version, config = _check_header(records[0], path)
    evaluations, stops, asked = [], [], []
    lines_of = []  # the line number of each evaluation
    for number, record in enumerate(records[1:], start=2):
        if version >= 3 and record.get("type") == "stop":
            stops.append(_check_stop(record, number, path))
            continue
        if version >= 4 and record.get("type") == "asked":
            asked.append(_check_asked(record, len(evaluations), number, path))
            continue
        evaluation = _check_evaluation(record, version, number, path)
        if evaluation.index != len(evaluations):
            raise _index_error(evaluation.index, len(evaluations), number, lines_of, path)
        evaluations.append(evaluation)
        lines_of.append(number)
    return JournalContents(version, config, evaluations, stops, asked)


_HEADER_START = b'{"type": "header"'
"""How every header manibo writes begins (the first key of the record, as ``json`` writes it)."""


def _check_is_journal(raw: bytes, path: Path) -> None:
    """Refuse a file that is not a manibo journal, judged by its first line: a complete first
    line must be a header record, and a file without a complete line must begin like one (a
    header cut off by a crash). An empty file passes.

    Raises:
        JournalError: saying the file is not a journal, how it begins and what to do.
    """
    if not raw:
        return
    end = raw.find(b"\n")
    first = raw if end < 0 else raw[:end]
    if end < 0:
        if first.startswith(_HEADER_START) or _HEADER_START.startswith(first):
            return
        what = "it holds no complete line, and its text does not begin like a journal header"
    else:
        try:
            record = _json.loads(first)
        except (ValueError, UnicodeDecodeError, RecursionError):
            record = ValueError
        if isinstance(record, dict) and record.get("type") == "header":
            return
        if record is ValueError:
            what = "line 1 is not a header (it is not JSON)"
        elif not isinstance(record, dict):
            what = f"line 1 is not a header (it holds a {type(record).__name__}, not a record)"
        else:
            what = f"line 1 is not a header (type {record.get('type')!r})"
    raise JournalError(
        f"{path} is not a manibo journal: {what}; it begins {first[:40]!r}. A journal begins "
        'with a header line {"type": "header", ...} written by manibo. The file was left as it '
        "was: name a journal that manibo wrote, or, for a new run, a path that does not exist "
        "yet."
    )


def check_is_journal(path: str | Path) -> None:
    """Refuse an existing file that is not a manibo journal, reading only its first line and
    creating nothing (no lock file); a missing or empty file passes. :meth:`JournalWriter.load`
    checks again under the lock.

    Raises:
        JournalError: as :meth:`JournalWriter.load` for a file that is not a journal.
    """
    path = Path(path).expanduser()
    head = _head(path)
    if head is not None:  # missing, a folder, unreadable: the writer says which
        _check_is_journal(head, path)


def recorded_config(path: str | Path) -> dict[str, Any] | None:
    """The configuration in the header of the journal ``path``, read from its first line alone;
    None where there is none to read (no file, not a journal, a header cut off)."""
    head = _head(Path(path).expanduser())
    if head is None or b"\n" not in head:
        return None
    try:
        record = _json.loads(head[: head.index(b"\n")])
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not (isinstance(record, dict) and record.get("type") == "header"):
        return None
    config = record.get("config")
    return config if isinstance(config, dict) else None


def _head(path: Path) -> bytes | None:
    """The bytes of ``path`` up to its first newline (or the whole file if it has none, read in
    64 KB blocks); None where it cannot be read."""
    head = b""
    try:
        with open(path, "rb") as f:
            while b"\n" not in head:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
                head += chunk
    except OSError:
        return None
    return head


def _decode(line: bytes, number: int, path: Path) -> dict[str, Any]:
    try:
        record = _json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise _malformed(path, number, f"it is not valid JSON ({err})") from err
    if not isinstance(record, dict):
        raise _malformed(path, number, f"it holds a {type(record).__name__}, not a record")
    return record


def _malformed(path: Path, number: int, what: str) -> JournalError:
    return JournalError(
        f"journal {path} line {number} is malformed: {what}. Every other line is intact; repair "
        "or remove that line by hand, then resume."
    )


def _check_header(record: dict[str, Any], path: Path) -> tuple[int, dict[str, Any]]:
    if record.get("type") != "header":
        raise JournalError(
            f"journal {path} line 1 is not a header (type {record.get('type')!r}); the file was "
            "not written by manibo."
        )
    version = record.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        if isinstance(version, int) and not isinstance(version, bool) and version < 2:
            advice = (
                "it was written by an older manibo; start a new run (`manibo run --fresh` moves "
                "the old journal aside)"
            )
        else:
            advice = "it was written by another version of manibo; read it with that version"
        raise JournalError(
            f"journal {path} has format version {version!r}, but this manibo reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}: {advice}."
        )
    if not isinstance(record.get("config"), dict):
        raise _malformed(path, 1, "the header has no `config` record")
    return version, record["config"]


def _check_stop(record: dict[str, Any], number: int, path: Path) -> Stop:
    problems = [f"unknown field {k!r}" for k in sorted(set(record) - _STOP_FIELDS)]
    if not isinstance(record.get("reason"), str):
        problems.append(f"`reason` must be a string, got {record.get('reason')!r}")
    count = record.get("evaluations")
    if not _is_count(count):
        problems.append(f"`evaluations` must be a non-negative integer, got {count!r}")
    if record.get("elapsed") is not None and not _is_real(record["elapsed"]):
        problems.append(f"`elapsed` must be a number or null, got {record['elapsed']!r}")
    if problems:
        raise _malformed(path, number, "; ".join(problems))
    return Stop(record["reason"], count, record.get("elapsed"), str(record.get("time", "")))


def _check_asked(record: dict[str, Any], told: int, number: int, path: Path) -> Asked:
    problems = [f"missing field {k!r}" for k in sorted(_ASKED_FIELDS - {"elapsed"} - set(record))]
    problems += [f"unknown field {k!r}" for k in sorted(set(record) - _ASKED_FIELDS)]
    if problems:
        raise _malformed(path, number, ", ".join(problems))
    step, count, points = record["step"], record["evaluations"], record["points"]
    seconds = record["proposal_seconds"]
    if not (_is_count(step) and _is_count(count) and count <= step):
        problems.append(
            f"`step` and `evaluations` must be integers with 0 <= evaluations <= step, got "
            f"{step!r} and {count!r}"
        )
    elif count != told:
        problems.append(f"`evaluations` is {count}, but {told} evaluation(s) precede it")
    if not isinstance(points, list) or not points or not all(_is_point(p) for p in points):
        problems.append("`points` must be a non-empty list of points (lists of finite numbers)")
    elif not (
        isinstance(seconds, list)
        and len(seconds) == len(points)
        and all(_is_real(s) for s in seconds)
    ):
        problems.append("`proposal_seconds` must be a list of numbers, one per point")
    if record.get("elapsed") is not None and not _is_real(record["elapsed"]):
        problems.append(f"`elapsed` must be a number or null, got {record['elapsed']!r}")
    if problems:
        raise _malformed(path, number, "; ".join(problems))
    return Asked(step, count, points, seconds, record.get("elapsed"))


def _check_evaluation(record: dict[str, Any], version: int, number: int, path: Path) -> Evaluation:
    if record.get("type") != "evaluation":
        raise _malformed(path, number, f"record type {record.get('type')!r} is not 'evaluation'")
    unknown = sorted(set(record) - _EVALUATION_FIELDS[version])
    missing = sorted({"x", "y", "status", "index"} - set(record))
    if unknown or missing:
        what = ", ".join(
            [f"unknown field {k!r}" for k in unknown] + [f"missing field {k!r}" for k in missing]
        )
        raise _malformed(path, number, what)
    index, status, y = record["index"], record["status"], record["y"]
    problems = []
    if not _is_count(index):
        problems.append(f"`index` must be a non-negative integer, got {index!r}")
    if not _is_point(record["x"]):
        problems.append("`x` must be a list of finite numbers (nested for matrix points)")
    if status == "ok":
        if not _is_real(y) or not math.isfinite(y):
            problems.append(f"an 'ok' evaluation needs a finite number `y`, got {y!r}")
    elif status == "failed":
        if y is not None:
            problems.append(f"a 'failed' evaluation has `y` null, got {y!r}")
    else:
        problems.append(f"`status` must be 'ok' or 'failed', got {status!r}")
    if record.get("error") is not None and not isinstance(record["error"], str):
        problems.append(f"`error` must be a string or null, got {record['error']!r}")
    for name in ("seconds", "proposal_seconds", "elapsed"):
        value = record.get(name)
        if value is not None and not _is_real(value):
            problems.append(f"`{name}` must be a number or null, got {value!r}")
    if not isinstance(record.get("extra", {}), dict):
        problems.append("`extra` must be a record")
    if problems:
        raise _malformed(path, number, "; ".join(problems))
    return Evaluation(**{k: v for k, v in record.items() if k != "type"})


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_point(value: object) -> bool:
    if not isinstance(value, list) or not value:
        return False
    return all(
        _is_point(v) if isinstance(v, list) else _is_real(v) and math.isfinite(v) for v in value
    )


def _evaluation_record(evaluation: Evaluation, version: int) -> dict[str, Any]:
    """The journal record of ``evaluation`` in format ``version``."""
    record = {"type": "evaluation", **asdict(evaluation)}
    return {k: v for k, v in record.items() if k in _EVALUATION_FIELDS[version]}


def _index_error(
    index: int, expected: int, number: int, lines_of: list[int], path: Path
) -> JournalError:
    """The error of evaluation line ``number`` whose ``index`` is not ``expected``;
    ``lines_of[i]`` is the line of evaluation ``i``."""
    if index < expected:
        what = f"index {index} appears a second time (the record at line {lines_of[index]} has it)"
    else:
        missing = f"{expected}" if index == expected + 1 else f"{expected} to {index - 1}"
        what = f"it has index {index}, but index {missing} is missing before it"
    return _malformed(path, number, what)


# -------------------------------------------------------------------------------- the writer
class JournalWriter:
    """The single writer of a journal, holding its lock from construction to :meth:`close`.

    Args:
        path: the journal file (it need not exist yet; ``~`` is expanded to the home folder).

    Raises:
        JournalLockedError: another writer holds the lock; the message names it.
        JournalError: the lock file cannot be created or written (an unwritable folder, a full
            disk); the lock is not kept.
    """

    def __init__(self, path: str | Path) -> None:
        # absolute: an objective that changes the working folder must not move the journal
        self.path = Path(os.path.abspath(Path(path).expanduser()))
        if self.path.is_dir():
            raise JournalError(f"journal {self.path} is a folder; name a file in it.")
        real = Path(os.path.realpath(self.path))  # a symbolic link shares its target's lock
        self.lock_path = real.with_name(real.name + ".lock")
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._size: int | None = None  # the journal's length as this writer left it
        self.version = JOURNAL_VERSION
        """The format this writer appends in: the loaded journal's, or the current one."""
        self.stops: list[Stop] = []
        """The stop records of the loaded journal."""
        self.asked: list[Asked] = []
        """The asked records of the loaded journal."""
        self._opened_by = os.getpid()
        self._lock_fd = _acquire_lock(self.lock_path, self.path)
        _OPEN_WRITERS.add(self)

    def load(self) -> tuple[dict[str, Any] | None, list[Evaluation]]:
        """Read the journal under the lock, moving a cut-off last line aside first (a last line
        that lacks only its newline, a complete and valid record, is kept and gets it back).

        Sets :attr:`version`, :attr:`stops` and :attr:`asked` from what it reads, and opens the
        journal for appending (so that a journal that cannot be written fails here).

        Returns:
            ``(config, evaluations)``; ``(None, [])`` when the file is absent or holds no
            complete line yet.

        Raises:
            JournalError: the journal cannot be read or is malformed, or the file is not a
                manibo journal (its first line is not a header; the file is left untouched).
            JournalLockedError: another writer holds the journal file through a hard link.
            OSError: it cannot be opened for appending.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None, []
        except OSError as err:
            raise JournalError(f"cannot read journal {self.path}: {err}.") from err
        _check_is_journal(raw, self.path)  # before anything is moved aside: not our file
        # locked before a cut-off line is moved aside: it may be another writer's line in progress
        # (and a journal this process cannot append to is refused now, not at a tell)
        self._open()
        keep = raw.rfind(b"\n") + 1
        contents, whole = (
            _whole_without_newline(raw, self.path) if keep < len(raw) else (None, False)
        )
        if contents is not None:  # a complete record whose newline was stripped (an editor)
            self._write_bytes(b"\n")
        else:
            if keep < len(raw):  # an earlier line at fault is reported first, nothing moved
                parse_records(raw[:keep], self.path)
                self._quarantine(raw[keep:], keep, whole)
            contents = parse_records(raw[:keep], self.path)
        if contents is None:
            return None, []
        self.version, self.stops, self.asked = contents.version, contents.stops, contents.asked
        return contents.config, contents.evaluations

    def create(self, config: dict[str, Any]) -> None:
        """Write the header of a new journal (the file must be absent or empty)."""
        existed = self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._open()
        if os.fstat(self._fd).st_size:
            raise JournalError(f"journal {self.path} is not empty; it cannot get a new header.")
        self.version, self.stops, self.asked = JOURNAL_VERSION, [], []
        header = {
            "type": "header",
            "version": JOURNAL_VERSION,
            "created": _utc_now(),
            "config": config,
        }
        self._write_line(header)
        if not existed:
            _fsync_folder(self.path.parent)

    def append(self, evaluation: Evaluation) -> None:
        """Append one evaluation and force it to disk before returning.

        Raises:
            JournalError: the journal was deleted or replaced since this writer opened it.
            OSError: the write or the ``fsync`` failed (the file is left as it was before).
        """
        self._append(_evaluation_record(evaluation, self.version))

    def line(self, evaluation: Evaluation) -> str:
        """The line (JSON text, without its newline) that :meth:`append` writes for
        ``evaluation`` in this journal's format."""
        return _json.dumps(_evaluation_record(evaluation, self.version))

    def append_stop(self, stop: Stop) -> bool:
        """Append a stop record (not in a format-2 journal, which has none); True if written.

        Raises:
            JournalError, OSError: as :meth:`append`.
        """
        if self.version < 3:
            return False
        self._append({"type": "stop", **asdict(stop)})
        self.stops.append(stop)
        return True

    def append_asked(self, asked: Asked) -> bool:
        """Append an asked batch and force it to disk before returning (not in a journal of
        format 3 or older, which has no asked records); True if written.

        Raises:
            JournalError, OSError: as :meth:`append`.
        """
        if self.version < 4:
            return False
        self._append({"type": "asked", **asdict(asked)})
        return True

    def _append(self, record: dict[str, Any]) -> None:
        self._check_not_forked()
        if self._fd is None:
            self._open()
        self._check_still_ours()
        self._write_line(record)

    def close(self) -> None:
        """Close the journal and release the lock (idempotent)."""
        for name in ("_fd", "_lock_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)

    def __del__(self) -> None:
        self.close()

    # internals --------------------------------------------------------------------------------
    def _check_not_forked(self) -> None:
        """Refuse a write from a forked copy of this writer (see :func:`_close_in_forked_child`)."""
        if os.getpid() != self._opened_by:
            raise JournalError(
                f"journal {self.path} is written by process {self._opened_by}, which opened it; "
                f"this process ({os.getpid()}) is a fork of it and holds no lock. Evaluate in "
                "the child and tell the results in the parent (an executor does), or give the "
                "child its own optimiser and journal."
            )

    def _close_in_forked_child(self) -> None:
        """Close this writer's copies of the journal and its lock in a forked child: the lock of
        ``flock`` belongs to the open file, which a fork shares, so the workers of a process
        pool (forked after the optimiser took its lock) held it after their parent died (a
        ``SIGKILL``ed run's journal stayed locked until the user found and killed them)."""
        for name in ("_fd", "_lock_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)  # not flock(LOCK_UN), which would unlock the parent too

    def _open(self) -> None:
        self._check_not_forked()
        if self._fd is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
            self._fd = os.open(self.path, flags, 0o644)
            try:
                _lock_journal(self._fd)
            except OSError:
                os.close(self._fd)
                self._fd = None
                raise JournalLockedError(
                    f"journal {self.path} is already being written under another name (a hard "
                    "link to the same file). Only one process may write a journal at a time."
                ) from None
            stat = os.fstat(self._fd)
            self._identity = (stat.st_dev, stat.st_ino)
            self._size = stat.st_size

    def _check_still_ours(self) -> None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            stat = None
        if stat is None or (stat.st_dev, stat.st_ino) != self._identity:
            raise JournalTamperedError(
                f"journal {self.path} was deleted or replaced while this run was writing it; "
                "manibo does not recreate a journal without its header"
            )
        if self._size is not None and stat.st_size != self._size:
            change = "cut" if stat.st_size < self._size else "grown"
            raise JournalTamperedError(
                f"journal {self.path} was {change} to {stat.st_size} bytes by another program "
                f"while this run was writing it (this run had left {self._size}); manibo does "
                "not write after that, which would leave records it cannot read back"
            )

    def _write_line(self, record: dict[str, Any]) -> None:
        self._write_bytes((_json.dumps(record) + "\n").encode())

    def _write_bytes(self, data: bytes) -> None:
        start = os.fstat(self._fd).st_size
        try:
            written = 0
            while written < len(data):  # a regular file takes the line in one call, but be sure
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
            self._size = start + len(data)
        except BaseException:
            # cut a partial (or not durably written) line back off, so that a retry appends it
            # once; the lock guarantees that nobody else appended meanwhile
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            raise

    def _quarantine(self, tail: bytes, keep: int, whole: bool) -> None:
        """Move ``tail``, the last line without its newline, to a ``.corrupt`` file and cut the
        journal back to its first ``keep`` bytes; ``whole``: the line is complete JSON, but no
        valid record where it stands (else it was cut off)."""
        corrupt = _exclusive_file(self.path.with_name(self.path.name + ".corrupt"), tail)
        with open(self.path, "r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        self._size = keep
        _fsync_folder(self.path.parent)
        from manibo._stack import user_stacklevel  # imports torch: not for every journal reader

        what = (
            "lacks its newline and, though whole, is no valid record where it stands (edited "
            "by hand, or a record out of its place)"
            if whole
            else "was cut off by a crash in the middle of a write"
        )
        warnings.warn(
            f"journal {self.path}: the last line ({len(tail)} bytes) {what}; it was moved to "
            f"{corrupt}. Every record before it was kept.",
            JournalWarning,
            stacklevel=user_stacklevel(),
        )


def set_aside(path: str | Path) -> Path:
    """Move the journal ``path`` to a new unique name beside it, under its lock; returns the name.

    Used to start a run afresh without deleting the old one (``manibo run --fresh``).
    """
    path = Path(path).expanduser()
    writer = JournalWriter(path)
    try:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for attempt in range(1000):
            target = path.with_name(
                f"{path.name}.{stamp}{'' if not attempt else f'-{attempt}'}.old"
            )
            try:
                os.link(path, target)  # fails instead of overwriting an earlier one
            except FileExistsError:
                continue
            except OSError:  # a file system without hard links: rename to a name seen free
                if target.exists():
                    continue
                os.rename(path, target)
            else:
                os.unlink(path)
            _fsync_folder(path.parent)
            return target
        raise JournalError(f"could not find a free name to move {path} aside.")
    finally:
        writer.close()


def _whole_without_newline(raw: bytes, path: Path) -> tuple[JournalContents | None, bool]:
    """The records of ``raw`` when its last line, which lacks its newline, is a complete and
    valid record (an editor stripped the final newline), else None; and whether that line is
    whole JSON (False where it is cut off: a line cut off by a crash cannot pass, since a
    record's JSON ends with its closing brace)."""
    try:
        return parse_records(raw + b"\n", path), True
    except JournalError:
        try:
            json.loads(raw[raw.rfind(b"\n") + 1 :])
        except (ValueError, RecursionError):  # RecursionError: deeply nested brackets
            return None, False
        return None, True


def _exclusive_file(base: Path, data: bytes) -> Path:
    """Write ``data`` to ``base`` or ``base.1``, ``base.2`` ... whichever does not exist yet."""
    for attempt in range(10_000):
        target = base if attempt == 0 else base.with_name(f"{base.name}.{attempt}")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        try:
            os.write(fd, data)
            os.fsync(fd)
        except BaseException:  # a full disk: leave no empty or partial copy behind
            os.close(fd)
            target.unlink(missing_ok=True)
            raise
        os.close(fd)
        return target
    raise JournalError(f"too many {base.name}.N files beside the journal; remove old ones.")


def _fsync_folder(folder: Path) -> None:
    """Make a new or renamed directory entry durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_OPEN_WRITERS: weakref.WeakSet[JournalWriter] = weakref.WeakSet()
"""The writers of this process (closed ones included, until collected)."""


def _close_writers_in_forked_child() -> None:
    for writer in list(_OPEN_WRITERS):
        writer._close_in_forked_child()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_close_writers_in_forked_child)


def _utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def _acquire_lock(lock_path: Path, journal: Path) -> int:
    """Open ``lock_path``, take its exclusive lock without waiting and write the holder into it."""
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as err:
        raise JournalError(
            f"cannot create the lock file of journal {journal} ({err}); choose a writable folder."
        ) from err
    try:
        _lock(fd)
    except OSError:
        os.close(fd)
        raise JournalLockedError(
            f"journal {journal} is already being written by {_describe_holder(lock_path)}"
        ) from None
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": _utc_now()}
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(holder).encode())
    except OSError as err:  # a full disk: release the lock, or every retry here is refused
        os.close(fd)
        raise JournalError(
            f"cannot write the lock file {lock_path} of journal {journal} ({err}); nothing was "
            "written to the journal. Free space on that disk (or choose a writable folder) and "
            "try again."
        ) from err
    return fd


RELEASED_WHEN_TOLD: dict[Path, int] = {}
"""Lock files held by optimisers of this process that were closed while evaluations of an
interrupted run were still in flight (their count): the journal is released once those are
recorded (set and cleared by :meth:`manibo.loop.BayesianOptimizer.close`)."""


def _describe_holder(lock_path: Path) -> str:
    """Who holds the lock, and what to do about it (the end of a sentence)."""
    advice = (
        ". Only one process may write a journal at a time (two would evaluate points twice): wait "
        "for that one to finish or stop it (its lock goes when it exits), or write to another path."
    )
    try:
        holder = json.loads(lock_path.read_text())
        pid, host, since = holder["pid"], holder["host"], holder["since"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"another process (it has not written its name into {lock_path} yet){advice}"
    if pid == os.getpid() and host == socket.gethostname():
        waiting = RELEASED_WHEN_TOLD.get(lock_path)
        if waiting:
            return (
                f"an optimiser of this process that was closed while {waiting} evaluation(s) of "
                "its interrupted run were still in flight: it releases the journal once they "
                "return and are recorded. Wait for them (an executor's shutdown(wait=True) "
                "does), then open the journal again."
            )
        return (
            f"another optimiser of this process (pid {pid}, since {since}). Call `close()` on "
            "that optimiser (or delete it), then open the journal again."
        )
    if host == socket.gethostname() and not _running(pid):
        return (
            f"process {pid} on this host (since {since}), which is no longer running: a process "
            f"it started holds the lock still (`fuser {lock_path}` lists it on Linux). Stop that "
            "one, or write to another path."
        )
    return f"process {pid} on host {host} (since {since}){advice}"


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (True where that cannot be told: on Windows,
    signal 0 is CTRL_C_EVENT, which ``os.kill`` would send to the console)."""
    if sys.platform == "win32":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, OverflowError):  # not ours to signal (alive), or no such number
        return True
    return True


try:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    _lock_journal = _lock

except ImportError:  # Windows
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _lock_journal(fd: int) -> None:
        """Nothing: a Windows lock is mandatory, and on the journal it would keep readers out."""
