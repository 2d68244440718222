"""The journal: its schema, one writer under a lock, readers that never modify, durable appends."""

import errno
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import manibo.journal
from manibo.journal import (
    JOURNAL_VERSION,
    Asked,
    Evaluation,
    Journal,
    JournalError,
    JournalLockedError,
    JournalTamperedError,
    JournalWarning,
    JournalWriter,
    Stop,
    set_aside,
)


def _python(code, *args, stdout=subprocess.DEVNULL):
    """A Python process running ``code`` with ``args`` bound (a journal needs no torch: it starts
    in a fraction of a second); its stderr is a pipe."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    prelude = "import json, sys\nargs = json.loads(sys.argv[1])\n"
    command = [sys.executable, "-c", prelude + code, json.dumps(args)]
    return subprocess.Popen(command, env=env, stdout=stdout, stderr=subprocess.PIPE)


def test_a_journal_reader_imports_neither_torch_nor_the_loop():
    """``import manibo.journal`` (a reader beside a run, or the lock holder of another process)
    takes a fraction of a second: the package imports its loop, and with it torch, BoTorch and
    GPyTorch, only when ``manibo.minimize`` and the like are first used (tests/test_result.py
    uses them so)."""
    code = "import sys\nimport manibo.journal\nprint(sorted(m for m in ('torch', 'botorch', "
    code += "'gpytorch', 'manibo.loop') if m in sys.modules))"
    reader = _python(code, stdout=subprocess.PIPE)
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    assert out.decode().strip() == "[]"


def _journal(path, n=2, config=None):
    writer = JournalWriter(path)
    writer.create(config or {"seed": 3})
    for i in range(n):
        writer.append(Evaluation(x=[float(i), 1.0], y=0.5 * i, index=i))
    return writer


def _lines(path):
    return path.read_text().splitlines()


def test_round_trip(tmp_path):
    writer = JournalWriter(tmp_path / "j.jsonl")
    writer.create({"seed": 3})
    writer.append(Evaluation(x=[1.0, 0.0], y=2.5, index=0))
    writer.append(Evaluation(x=[0.0, 1.0], y=None, status="failed", error="boom", index=1))
    config, evaluations = Journal(tmp_path / "j.jsonl").read()
    assert config == {"seed": 3}
    assert [e.y for e in evaluations] == [2.5, None] and evaluations[1].error == "boom"
    header = json.loads(_lines(tmp_path / "j.jsonl")[0])
    assert header["version"] == JOURNAL_VERSION and header["type"] == "header"
    with pytest.raises(JournalError, match="not empty"):
        writer.create({})


def test_missing_header(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"type": "evaluation", "x": [1.0], "y": 1.0, "status": "ok", "index": 0}\n')
    with pytest.raises(JournalError, match="line 1 is not a header"):
        Journal(path).read()
    with pytest.raises(JournalError, match="does not exist"):
        Journal(tmp_path / "nope.jsonl").read()


def test_a_reader_never_modifies_a_journal_being_written(tmp_path):
    """A line still being written (no newline yet) is skipped by readers, never quarantined."""
    path = tmp_path / "j.jsonl"
    header = {"type": "header", "version": JOURNAL_VERSION, "config": {}}
    records = [
        {"type": "evaluation", "x": [0.5], "y": 1.0, "status": "ok", "index": i} for i in (0, 1)
    ]
    line = json.dumps({**records[0], "x": [0.1] * 5000, "index": 2})
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in (header, *records)))
        f.write(line[:7000])  # a writer half-way through a long line
    before = path.read_bytes()
    _, evaluations = Journal(path).read()
    assert len(evaluations) == 2
    assert path.read_bytes() == before  # not truncated
    assert [p.name for p in tmp_path.iterdir()] == ["j.jsonl"]  # nothing moved aside


def test_a_repeated_index_names_the_lines_that_hold_it_among_asked_lines(tmp_path):
    path = tmp_path / "j.jsonl"
    writer = _journal(path, n=0)
    for i in range(2):
        writer.append_asked(Asked(i, i, [[0.0, 1.0]], [0.1]))
        writer.append(Evaluation(x=[0.0, 1.0], y=0.5, index=i))
    writer.append(Evaluation(x=[0.0, 1.0], y=0.5, index=1))
    writer.close()
    # line 1 header, 2 asked, 3 evaluation 0, 4 asked, 5 evaluation 1, 6 evaluation 1 again
    with pytest.raises(JournalError, match=r"line 6 .*index 1 .*the record at line 5 has it"):
        Journal(path).read()


def test_only_the_writer_moves_a_cut_off_line_aside_and_never_over_an_earlier_one(tmp_path):
    path = tmp_path / "j.jsonl"
    _journal(path).close()
    tails = [b'{"type": "evaluation", "x": [0.0, 0.', b'{"type": "evaluation", "x": [9']
    for tail in tails:
        with open(path, "ab") as f:
            f.write(tail)  # a crash in the middle of a write
        writer = JournalWriter(path)
        with pytest.warns(JournalWarning, match="cut off"):
            _, evaluations = writer.load()
        assert len(evaluations) == 2
        writer.append(Evaluation(x=[5.0, 1.0], y=1.0, index=len(evaluations)))
        writer.close()
        lines = _lines(path)
        path.write_text("\n".join(lines[:-1]) + "\n")  # back to two evaluations
    assert (tmp_path / "j.jsonl.corrupt").read_bytes() == tails[0]
    assert (tmp_path / "j.jsonl.corrupt.1").read_bytes() == tails[1]


def test_a_complete_last_line_that_only_lacks_its_newline_is_kept(tmp_path, recwarn):
    """An editor that strips the final newline made the writer move the last evaluation, whole
    and valid, to `.corrupt`: a resumed run lost it and evaluated its index again."""
    path = tmp_path / "j.jsonl"
    _journal(path, n=3).close()
    whole = path.read_bytes()
    path.write_bytes(whole.rstrip(b"\n"))
    assert [e.index for e in Journal(path).read()[1]] == [0, 1, 2]  # as the writer reads it
    writer = JournalWriter(path)
    assert [e.index for e in writer.load()[1]] == [0, 1, 2]
    assert path.read_bytes() == whole  # the newline is back
    writer.append(Evaluation(x=[3.0, 1.0], y=1.5, index=3))
    writer.close()
    assert [e.index for e in Journal(path).read()[1]] == [0, 1, 2, 3]
    assert not list(tmp_path.glob("*.corrupt*")) and not recwarn.list
    # a header alone, without its newline, is kept too
    path.unlink()
    writer = JournalWriter(path)
    writer.create({"seed": 5})
    writer.close()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert Journal(path).read() == ({"seed": 5}, [])  # readers too (they said "no header yet")
    writer = JournalWriter(path)
    assert writer.load() == ({"seed": 5}, [])
    writer.close()
    # a complete record that is not valid where it stands is moved aside as before, and the
    # warning says why (it said the line was cut off by a crash)
    path.write_bytes(whole + _evaluation(7).encode())
    writer = JournalWriter(path)
    why = r"lacks its newline and, though whole, is no valid record where it stands"
    with pytest.warns(JournalWarning, match=why):
        assert len(writer.load()[1]) == 3
    writer.close()
    assert (tmp_path / "j.jsonl.corrupt").read_text() == _evaluation(7)


def test_a_whole_last_line_is_not_blamed_for_an_earlier_line_at_fault(tmp_path):
    """With line 2 broken and the last record whole but without its newline, the error names
    line 2 and leaves the last record where it is: it was moved aside as the culprit, and lost
    once the user repaired line 2."""
    path = tmp_path / "j.jsonl"
    _journal(path, n=3).close()
    lines = _lines(path)
    lines[1] = lines[1].replace('"ok"', '"okk"')
    broken = ("\n".join(lines)).encode()  # no final newline
    path.write_bytes(broken)
    with pytest.raises(JournalError, match="line 2"):
        JournalWriter(path).load()
    assert path.read_bytes() == broken and not list(tmp_path.glob("*.corrupt*"))
    cut = broken[:-20]  # and a last line cut off by a crash: nothing moved before line 2 is fixed
    path.write_bytes(cut)
    with pytest.raises(JournalError, match="line 2"):
        JournalWriter(path).load()
    assert path.read_bytes() == cut and not list(tmp_path.glob("*.corrupt*"))
    path.write_bytes(broken)
    lines[1] = lines[1].replace('"okk"', '"ok"')  # repaired: every evaluation is there
    path.write_bytes(("\n".join(lines)).encode())
    writer = JournalWriter(path)
    assert [e.index for e in writer.load()[1]] == [0, 1, 2]
    writer.close()


def test_a_last_line_of_deeply_nested_brackets_is_moved_aside(tmp_path):
    """json.loads raised RecursionError on it, out of the resume."""
    path = tmp_path / "j.jsonl"
    _journal(path).close()
    with open(path, "ab") as f:
        f.write(b"[" * 200_000)
    writer = JournalWriter(path)
    with pytest.warns(JournalWarning, match="cut off"):
        assert len(writer.load()[1]) == 2
    writer.close()


def test_a_journal_without_a_complete_line_is_started_again_by_its_writer(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"type": "header", "vers')  # killed while writing the header
    with pytest.raises(JournalError, match="no header line yet"):
        Journal(path).read()
    writer = JournalWriter(path)
    with pytest.warns(JournalWarning):
        assert writer.load() == (None, [])
    writer.create({"seed": 1})
    assert Journal(path).read() == ({"seed": 1}, [])


@pytest.mark.parametrize(
    "content",
    [
        b"just some notes without newline",
        b"a,b\n1,2\n3,4",  # a CSV file without a final newline
        b'{\n  "seed": 0\n}\n',  # a pretty-printed JSON file
        b'{"seed": 0, "values": [1, 2]}',  # one-line JSON without a newline
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"[1, 2]\n",
        b"\n",
    ],
)
def test_a_file_that_is_not_a_journal_is_refused_untouched(tmp_path, content):
    """Neither the writer nor a reader moves a line of a file that is not a journal aside (it
    is no line cut off by a crash): the file is refused as it is."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(JournalError, match="is not a manibo journal.*path that does not exist"):
        Journal(path).read()
    with pytest.raises(JournalError, match="is not a manibo journal"):
        manibo.journal.check_is_journal(path)
    writer = JournalWriter(path)
    with pytest.raises(JournalError, match="is not a manibo journal"):
        writer.load()
    writer.close()
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "notes.txt.lock"]
    assert manibo.journal.recorded_config(path) is None


def test_the_recorded_configuration_is_read_from_the_header_line_alone(tmp_path):
    path = tmp_path / "run.jsonl"
    assert manibo.journal.recorded_config(path) is None  # no file
    writer = JournalWriter(path)
    writer.load()
    writer.create({"seed": 3, "metadata": {"objective": "obj:f"}})
    writer.close()
    with open(path, "ab") as f:
        f.write(b"not a record, and no newline")  # later lines are not read
    assert manibo.journal.recorded_config(path) == {"seed": 3, "metadata": {"objective": "obj:f"}}


def test_a_tilde_in_a_journal_path_is_the_home_folder(tmp_path, monkeypatch):
    """journal='~/x.jsonl' created a folder literally named '~' in the working folder."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    writer = JournalWriter("~/runs/x.jsonl")
    assert writer.load() == (None, [])
    writer.create({"seed": 1})
    writer.close()
    assert (tmp_path / "home" / "runs" / "x.jsonl").exists()
    assert Journal("~/runs/x.jsonl").read() == ({"seed": 1}, [])
    manibo.journal.check_is_journal("~/runs/x.jsonl")
    assert set_aside("~/runs/x.jsonl").parent == tmp_path / "home" / "runs"
    assert list((tmp_path / "cwd").iterdir()) == []


def test_a_header_cut_off_by_a_crash_still_counts_as_a_journal(tmp_path):
    path = tmp_path / "j.jsonl"
    for partial in (b"{", b'{"type": "he', b'{"type": "header", "version": 4, "cr'):
        path.write_bytes(partial)
        manibo.journal.check_is_journal(path)
        with pytest.raises(JournalError, match="no header line yet"):
            Journal(path).read()


def _evaluation(number, **changes):
    record = {"type": "evaluation", "x": [1.0, 0.0], "y": 1.0, "status": "ok", "index": number}
    return json.dumps({**record, **changes})


def _asked(told, **changes):
    record = {"type": "asked", "step": told, "evaluations": told, "points": [[1.0, 0.0]]}
    return json.dumps({**record, "proposal_seconds": [0.5], **changes})


def test_a_journal_cut_during_the_run_is_not_written_after_the_cut(tmp_path):
    # `: > run.jsonl` (or logrotate's copytruncate) emptied the journal, and the next records
    # went in after the cut: tell returned, and the journal could no longer be resumed
    path = tmp_path / "j.jsonl"
    writer = _journal(path)
    writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))
    open(path, "w").close()
    with pytest.raises(JournalTamperedError, match=r"was cut to 0 bytes by another program"):
        writer.append(Evaluation(x=[3.0, 1.0], y=1.0, index=3))
    assert path.read_bytes() == b""
    # grown by another program: the next record was glued to its bytes, unreadable
    grown = tmp_path / "grown.jsonl"
    writer = _journal(grown)
    with open(grown, "ab") as other:
        other.write(b"garbage without a newline")
    before = grown.read_bytes()
    with pytest.raises(JournalTamperedError, match=r"was grown to \d+ bytes by another program"):
        writer.append(Evaluation(x=[3.0, 1.0], y=1.0, index=2))
    assert grown.read_bytes() == before


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"version": 99}], "format version 99.*another version"),
        ([{"version": 1}], "format version 1.*older manibo.*--fresh"),
        ([{}, _evaluation(0), _evaluation(0)], "line 3 is malformed: index 0 appears a second"),
        ([{}, _evaluation(0), _evaluation(2)], "line 3 is malformed:.*index 1 is missing"),
        ([{}, _evaluation(0, y=None)], "line 2.*'ok' evaluation needs a finite number"),
        ([{}, _evaluation(0, status="weird")], "line 2.*`status` must be 'ok' or 'failed'"),
        ([{}, _evaluation(0, x="abc")], "line 2.*`x` must be a list"),
        ([{}, _evaluation(0, index="0")], "line 2.*`index` must be a non-negative integer"),
        ([{}, json.dumps({"type": "evaluation", "x": [1.0]})], "line 2.*missing field 'index'"),
        ([{}, _evaluation(0, colour="red")], "line 2.*unknown field 'colour'"),
        ([{}, "[1, 2]"], "line 2.*holds a list"),
        ([{}, "{not json"], "line 2.*not valid JSON"),
        ([{}, "[" * 100_000], "line 2.*not valid JSON"),  # was a RecursionError
        ([{}, _evaluation(0), json.dumps({"type": "header"})], "line 3.*type 'header'"),
        ([{}, _asked(0, step=1, evaluations=1)], "line 2.*`evaluations` is 1, but 0 evaluation"),
        ([{}, _asked(0, step=-1)], "line 2.*`step` and `evaluations` must be integers"),
        ([{}, _asked(0, points=[])], "line 2.*`points` must be a non-empty list"),
        ([{}, _asked(0, points=[[1.0], "a"])], "line 2.*`points` must be a non-empty list"),
        ([{}, _asked(0, proposal_seconds=[])], "line 2.*one per point"),
        ([{}, _asked(0, colour=1)], "line 2.*unknown field 'colour'"),
        ([{}, json.dumps({"type": "asked", "step": 0})], "line 2.*missing field 'evaluations'"),
        ([{"version": 3}, _asked(0)], "line 2.*record type 'asked' is not 'evaluation'"),
    ],
)
def test_the_schema_is_checked_with_the_line_and_what_is_wrong(tmp_path, lines, message):
    path = tmp_path / "j.jsonl"
    header = {"type": "header", "version": JOURNAL_VERSION, "config": {}}
    text = [json.dumps({**header, **lines[0]}), *lines[1:]]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(JournalError, match=message):
        Journal(path).read()
    with pytest.raises(JournalError, match=message):
        JournalWriter(path).load()


def test_a_second_writer_is_refused_with_the_holder_named(tmp_path):
    path = tmp_path / "j.jsonl"
    first = _journal(path)
    with pytest.raises(JournalLockedError, match=rf"this process \(pid {os.getpid()}.*close"):
        JournalWriter(path)
    first.close()
    JournalWriter(path).close()  # free again once closed
    holder = _python(  # another process holds it: named by pid and host
        "import time\nfrom manibo.journal import JournalWriter\n"
        "w = JournalWriter(args[0])\nopen(args[1], 'w').close()\ntime.sleep(60)",
        str(path),
        str(tmp_path / "locked"),
    )
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "locked").exists() and time.monotonic() < deadline:
            assert holder.poll() is None, holder.stderr.read()
            time.sleep(0.01)
        with pytest.raises(JournalLockedError, match=rf"process {holder.pid} on host .*finish"):
            JournalWriter(path)
    finally:
        holder.kill()
        status = holder.wait()
        holder.stderr.close()
    assert status == -9
    JournalWriter(path).close()  # the kernel released the dead holder's lock


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the platform does not fork")
def test_a_killed_writers_forked_children_do_not_keep_its_journal_locked(tmp_path):
    # the workers of a fork-started ProcessPoolExecutor, forked after the optimiser took its
    # lock, held it after a SIGKILL of their parent: resume was refused, naming the dead
    # process, until the user found the orphaned workers and killed them
    path, pid_file = tmp_path / "j.jsonl", tmp_path / "child"
    holder = _python(
        "import os, time\nfrom manibo.journal import JournalWriter\n"
        "w = JournalWriter(args[0])\n"
        "if os.fork() == 0:  # the child names itself once it runs (after the fork's hooks)\n"
        "    open(args[1] + '.tmp', 'w').write(str(os.getpid()))\n"
        "    os.rename(args[1] + '.tmp', args[1])\n    time.sleep(60)\n    os._exit(0)\n"
        "time.sleep(60)",
        str(path),
        str(pid_file),
    )
    child = None
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            assert holder.poll() is None, holder.stderr.read()
            time.sleep(0.01)
        child = int(pid_file.read_text())
        holder.kill()
        holder.wait()
        JournalWriter(path).close()  # the child, still running, holds no copy of the lock
    finally:
        holder.kill()
        holder.wait()
        holder.stderr.close()
        if child is not None:
            os.kill(child, 9)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the platform does not fork")
def test_a_forked_copy_of_a_writer_is_refused_and_leaves_the_parents_journal_alone(tmp_path):
    # a forked copy that wrote first left the parent refusing every later write ("grown by
    # another program"); now the copy is refused and the parent goes on
    path = tmp_path / "j.jsonl"
    writer = _journal(path)
    said_r, said_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a write through the inherited writer, what it raised to the pipe
        try:
            writer.append_stop(Stop("budget", 2, 0.0))
            os.write(said_w, b"written")
        except BaseException as error:
            os.write(said_w, f"{type(error).__name__}: {error}".encode()[:4000])
        finally:
            os._exit(0)
    os.close(said_w)
    said = os.read(said_r, 4000).decode()
    os.close(said_r)
    os.waitpid(pid, 0)
    assert said.startswith("JournalError") and "is a fork of it and holds no lock" in said
    writer.append_stop(Stop("budget", 2, 0.0))  # the parent's writes go on
    writer.close()
    assert [stop.reason for stop in Journal(path).read_all().stops] == ["budget"]


@pytest.mark.skipif(manibo.journal._lock_journal is not manibo.journal._lock, reason="no flock")
def test_a_lock_whose_recorded_holder_is_dead_says_so(tmp_path):
    import fcntl
    import socket

    path = tmp_path / "j.jsonl"
    gone = _python("pass")
    gone.wait()
    gone.stderr.close()
    fd = os.open(tmp_path / "j.jsonl.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a process it started would hold it
        holder = {"pid": gone.pid, "host": socket.gethostname(), "since": "2026-11-28"}
        os.write(fd, json.dumps(holder).encode())
        with pytest.raises(
            JournalLockedError, match=rf"process {gone.pid} on this host .*no longer running.*fuser"
        ):
            JournalWriter(path)
    finally:
        os.close(fd)


def test_the_liveness_of_a_holder_is_not_asked_of_windows_by_a_signal(monkeypatch):
    # os.kill(pid, 0) sends CTRL_C_EVENT (0) to the console on Windows
    sent = []
    monkeypatch.setattr(manibo.journal.sys, "platform", "win32")
    monkeypatch.setattr(manibo.journal.os, "kill", lambda *args: sent.append(args))
    assert manibo.journal._running(12345) is True and sent == []


def test_a_journal_opened_through_another_name_has_one_writer(tmp_path):
    path = tmp_path / "j.jsonl"
    _journal(path).close()
    (tmp_path / "sym.jsonl").symlink_to(path)
    os.link(path, tmp_path / "hard.jsonl")
    first = JournalWriter(path)
    first.load()
    with pytest.raises(JournalLockedError, match="this process"):
        JournalWriter(tmp_path / "sym.jsonl")  # the same lock file: the target's
    if manibo.journal._lock_journal is manibo.journal._lock:  # flock: the file itself is locked
        with pytest.raises(JournalLockedError, match="hard link"):
            JournalWriter(tmp_path / "hard.jsonl").load()
    first.close()
    second = JournalWriter(tmp_path / "hard.jsonl")
    assert len(second.load()[1]) == 2
    second.close()
    assert not (tmp_path / "sym.jsonl.lock").exists()


def test_a_folder_is_refused_as_a_journal_without_a_lock_file_beside_it(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(JournalError, match="is a folder"):
        JournalWriter(tmp_path / "runs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "j.jsonl"
    writer = _journal(path)
    before = path.read_bytes()

    def half_then_full(fd, data):  # a partial write, then the disk is full
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    calls, real_write = [], os.write
    monkeypatch.setattr(manibo.journal.os, "write", half_then_full)
    with pytest.raises(OSError, match="No space"):
        writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))
    assert path.read_bytes() == before
    monkeypatch.setattr(manibo.journal.os, "write", real_write)
    monkeypatch.setattr(manibo.journal.os, "fsync", _fail_fsync)
    with pytest.raises(OSError, match="I/O"):
        writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))
    assert path.read_bytes() == before  # written but not durable: cut back off
    monkeypatch.undo()
    writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))
    assert [e.index for e in Journal(path).read()[1]] == [0, 1, 2]


def test_a_full_disk_when_the_journal_is_opened_releases_its_lock(tmp_path, monkeypatch):
    """The holder's record in the lock file was written unprotected: a full disk raised a bare
    `OSError: [Errno 28]` naming no file, kept the lock, and every retry in the process was
    refused with "already being written by another process"."""
    path = tmp_path / "j.jsonl"

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(manibo.journal.os, "write", full)
    with pytest.raises(JournalError, match=r"lock file .*j\.jsonl\.lock .*No space left") as info:
        JournalWriter(path)
    assert not isinstance(info.value, JournalLockedError)
    monkeypatch.undo()  # room again: the journal opens
    _journal(path).close()
    # a cut-off line met on a full disk: the lock is written, its copy aside is not
    with open(path, "ab") as f:
        f.write(b'{"type": "evaluation", "x": [0.0, 0.')
    before = path.read_bytes()
    real_write = os.write
    writes = []

    def full_after_the_lock(fd, data):
        writes.append(fd)
        if len(writes) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(manibo.journal.os, "write", full_after_the_lock)
    writer = JournalWriter(path)
    with pytest.raises(OSError, match="No space left"):
        writer.load()
    writer.close()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl", "j.jsonl.lock"]
    monkeypatch.undo()
    writer = JournalWriter(path)
    with pytest.warns(JournalWarning, match="cut off"):
        assert len(writer.load()[1]) == 2
    writer.close()
    assert (tmp_path / "j.jsonl.corrupt").read_bytes() == before[before.rfind(b"\n") + 1 :]


def _no_hard_links(source, target):
    raise OSError(errno.EPERM, "Operation not permitted")


def _fail_fsync(fd):
    raise OSError(errno.EIO, "I/O error")


def test_a_journal_deleted_or_replaced_during_the_run_is_not_recreated(tmp_path):
    path = tmp_path / "j.jsonl"
    writer = _journal(path)
    path.unlink()
    with pytest.raises(JournalError, match="deleted or replaced"):
        writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))
    assert not path.exists()
    path.write_text("someone else's file\n")
    with pytest.raises(JournalError, match="deleted or replaced"):
        writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))
    assert path.read_text() == "someone else's file\n"


def test_set_aside_renames_and_never_overwrites(tmp_path, monkeypatch):
    path = tmp_path / "j.jsonl"
    names = set()
    for attempt in range(3):
        if attempt == 2:  # a file system without hard links: renamed instead
            monkeypatch.setattr(manibo.journal.os, "link", _no_hard_links)
        _journal(path, n=attempt).close()
        moved = set_aside(path)
        assert not path.exists() and moved.name.startswith("j.jsonl.")
        assert len(Journal(moved).read()[1]) == attempt
        names.add(moved)
    monkeypatch.undo()
    assert len(names) == 3  # no move overwrote an earlier one
    writer = _journal(path)
    with pytest.raises(JournalLockedError):
        set_aside(path)  # not while a writer holds it
    writer.close()


WRITER = """
import os, time
import manibo.journal
from manibo.journal import Evaluation, JournalWriter

def write_in_pieces(fd, data, write=os.write):  # a slow file system: 4 KiB per call
    time.sleep(0.002)
    return write(fd, data[:4096])

manibo.journal.os.write = write_in_pieces
path, count, width = args
writer = JournalWriter(path)
writer.create({"width": width})
for i in range(count):
    writer.append(Evaluation(x=[0.5 + i] * width, y=float(i), index=i))
"""


@pytest.mark.slow
def test_a_reader_beside_a_writer_of_20000_float_lines_sees_only_whole_records(tmp_path):
    """Lines of 400 kB written 4 kB at a time, 2 ms apart: the reader sees them half-written,
    skips the unfinished tail, and never truncates or moves anything."""
    path, count, width = tmp_path / "j.jsonl", 8, 20_000
    reads, sizes, unfinished = [], [], 0
    writer = _python(WRITER, str(path), count, width)
    try:
        while not reads or len(reads[-1]) < count:
            assert writer.poll() in (None, 0), writer.stderr.read()
            time.sleep(0.01)  # several reads per line written (0.2 s a line)
            if not path.exists():
                continue
            sizes.append(path.stat().st_size)
            unfinished += not path.read_bytes().endswith(b"\n")
            try:
                config, evaluations = Journal(path).read()
            except JournalError as err:
                assert "no header line yet" in str(err)
                continue
            assert config == {"width": width}
            assert [e.index for e in evaluations] == list(range(len(evaluations)))
            assert all(e.x == [0.5 + e.index] * width for e in evaluations)
            reads.append(evaluations)
        assert writer.wait(timeout=60) == 0, writer.stderr.read()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        writer.stderr.close()
    assert sizes == sorted(sizes)  # the file only ever grew: the reader never truncated it
    assert unfinished >= 3 and len({len(r) for r in reads}) >= 3  # it read during the writing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl", "j.jsonl.lock"]
    assert len(Journal(path).read()[1]) == count


def _refuse(token):
    raise ValueError(f"non-standard JSON token {token}")


def test_non_finite_numbers_are_written_as_standard_json_and_read_back(tmp_path):
    path = tmp_path / "j.jsonl"
    config = {"surrogate_options": {"nu": math.inf}, "bounds": [-math.inf, 1.5], "gap": math.nan}
    writer = JournalWriter(path)
    writer.create(config)
    writer.append(Evaluation(x=[1.0, 0.0], y=2.0, index=0, extra={"spread": math.inf}))
    writer.close()
    for line in _lines(path):  # every line is standard JSON: no Infinity or NaN token
        json.loads(line, parse_constant=_refuse)
    assert json.loads(_lines(path)[0])["config"]["surrogate_options"] == {"nu": {"$float": "inf"}}
    read, evaluations = Journal(path).read()
    assert read["surrogate_options"]["nu"] == math.inf and read["bounds"] == [-math.inf, 1.5]
    assert math.isnan(read["gap"]) and evaluations[0].extra == {"spread": math.inf}
    with pytest.raises(ValueError, match=r"key '\$float' is reserved"):
        JournalWriter(tmp_path / "k.jsonl").create({"odd": {"$float": "inf"}})


def test_stop_records_are_read_back_and_checked(tmp_path):
    path = tmp_path / "j.jsonl"
    writer = _journal(path, n=2)
    assert writer.append_stop(Stop("callback", 2, 1.5))
    writer.append(Evaluation(x=[2.0, 1.0], y=1.0, index=2))  # a resumed run goes on
    writer.close()
    contents = Journal(path).read_all()
    assert contents.version == JOURNAL_VERSION == 4
    assert [(s.reason, s.evaluations, s.elapsed) for s in contents.stops] == [("callback", 2, 1.5)]
    assert [e.index for e in contents.evaluations] == [0, 1, 2]
    with open(path, "a") as f:
        f.write(json.dumps({"type": "stop", "reason": 3, "evaluations": -1, "colour": 1}) + "\n")
    with pytest.raises(JournalError, match=r"line 6 is malformed: unknown field 'colour'; "):
        Journal(path).read()


def test_asked_records_are_read_apart_from_the_evaluations(tmp_path):
    path = tmp_path / "j.jsonl"
    writer = _journal(path, n=1)
    batch = Asked(step=1, evaluations=1, points=[[0.5, 1.0], [0.25, 1.0]], proposal_seconds=[2, 2])
    assert writer.append_asked(batch)
    writer.append(Evaluation(x=[0.25, 1.0], y=3.0, index=1))
    writer.close()
    config, evaluations = Journal(path).read()
    assert [e.index for e in evaluations] == [0, 1]  # asked lines are not evaluations
    contents = Journal(path).read_all()
    assert contents.asked == [batch] and contents.version == 4
    with pytest.warns(JournalWarning, match="cut off"):  # killed while writing an asked line
        with open(path, "a") as f:
            f.write(_asked(2)[:30])
        writer = JournalWriter(path)
        writer.load()
    assert writer.asked == [batch]
    writer.close()
    assert (tmp_path / "j.jsonl.corrupt").read_text() == _asked(2)[:30]


FORMAT_2 = [
    {"type": "header", "version": 2, "config": {"nu": "INF"}},
    {"type": "evaluation", "x": [0.5], "y": 1.0, "status": "ok", "index": 0, "seconds": 0.1},
]


def test_format_2_journals_are_read_and_appended_to_in_format_2(tmp_path):
    path = tmp_path / "j.jsonl"
    text = "\n".join(json.dumps(r) for r in FORMAT_2) + "\n"
    path.write_text(text.replace('"INF"', "Infinity"))  # format 2 wrote Python's token
    config, evaluations = Journal(path).read()
    assert config == {"nu": math.inf} and evaluations[0].elapsed is None
    writer = JournalWriter(path)
    writer.load()
    assert writer.version == 2
    writer.append(Evaluation(x=[0.7], y=2.0, index=1, proposal_seconds=0.3, elapsed=4.0))
    assert not writer.append_stop(Stop("budget", 2, 4.0))  # format 2 has no stop records
    assert not writer.append_asked(Asked(2, 2, [[0.1]], [0.3]))  # nor asked records
    writer.close()
    assert set(json.loads(_lines(path)[-1])) == {
        "type", "x", "y", "status", "error", "index", "seconds", "extra"
    }  # fmt: skip
    assert len(Journal(path).read()[1]) == 2
    with open(path, "a") as f:
        f.write(_evaluation(2, x=[0.1], elapsed=1.0) + "\n")
    with pytest.raises(JournalError, match="line 4.*unknown field 'elapsed'"):
        Journal(path).read()
