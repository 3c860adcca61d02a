"""cli.paths (server-given output names) and cli.logsink (pass-through + kept tail)."""

from __future__ import annotations

import io
import os
from pathlib import Path, PurePosixPath

import pytest

from kcoral.cli.logsink import LogSink
from kcoral.cli.paths import output_destination, safe_output_path
from kcoral.protocol.errors import ServerError


@pytest.mark.parametrize("name", ["a.txt", "dir/b.bin", "./c", "d//e"])
def test_safe_paths(name: str) -> None:
    assert not safe_output_path(name).is_absolute()


def test_safe_path_normalises() -> None:
    assert safe_output_path("./x//y") == PurePosixPath("x/y")


BAD_NAMES = ["", "/etc/passwd", "../x", "a/../../x", "a/..", "a\\b", "a\x00b", ".", "./"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_unsafe_paths(name: str) -> None:
    with pytest.raises(ServerError):
        safe_output_path(name)


def test_destination_stays_inside_even_through_symlinks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "esc").symlink_to(tmp_path)
    assert output_destination(out, "a/b.txt") == (out / "a" / "b.txt").resolve()
    with pytest.raises(ServerError, match="outside"):
        output_destination(out, "esc/x.txt")


def test_logsink_passes_through_and_keeps_tail() -> None:
    stream = io.BytesIO()
    sink = LogSink(stream, keep=4)
    sink.write(b"abc")
    assert not sink.truncated and sink.text() == "abc"
    sink.write(b"defg")
    assert stream.getvalue() == b"abcdefg"
    assert sink.total == 7 and sink.truncated and sink.text() == "defg"


def test_logsink_decodes_with_replacement() -> None:
    sink = LogSink(None, keep=100)
    sink.write(b"ok \xff\xfe")
    assert sink.text().startswith("ok ") and "\ufffd" in sink.text()


def test_logsink_survives_a_closed_pipe() -> None:
    class Broken(io.BytesIO):
        def write(self, _b: bytes) -> int:  # type: ignore[override]
            raise BrokenPipeError

    sink = LogSink(Broken(), keep=10)
    sink.write(b"x")
    sink.write(b"y")
    assert sink.broken_pipe and sink.text() == "xy"


def test_job_chosen_text_reaches_the_terminal_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    from kcoral.cli.output import note, stdout
    from kcoral.cli.render import job_details
    from kcoral.protocol.models import JobState, JobTimes, JobView, OutputFile, PythonSpec

    view = JobView(id="j", owner="o", state=JobState.finished, spec=PythonSpec(argv=["\x1b[2Jm.py"]),
                   reason="output refused: \x1b]0;pwned\x07x", times=JobTimes(created=0),
                   outputs=[OutputFile(path="a\x1b[31m", size=1, sha256="0")])  # fmt: skip
    stdout().print(job_details(view))
    note("kcoral: \x9b31m done\nnext")
    out, err = capsys.readouterr()
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in err
    assert "\\x1b[2Jm.py" in out and "\\x1b]0;pwned\\x07x" in out and "a\\x1b[31m" in out
    assert "kcoral: \\x9b31m done\nnext" in err


def test_an_ok_jobs_refused_outputs_are_in_its_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The job ended well but some of what it wrote did not come back: the line that ends
    ``kcoral python`` says which, escaped (a name that draws its letters in another order too)."""
    from kcoral.cli.output import note
    from kcoral.cli.render import summary_line
    from kcoral.protocol.models import JobState, JobTimes, JobView, PythonSpec, Verdict

    reason = "output refused: report\u202etxt.exe: a control character in its name"
    view = JobView(id="j", owner="o", state=JobState.finished, verdict=Verdict.ok, exit_code=0, reason=reason,
                   spec=PythonSpec(argv=["m.py"]), times=JobTimes(created=0))  # fmt: skip
    note(summary_line(view))
    shown = "output refused: report\\u202etxt.exe: a control character in its name"
    assert capsys.readouterr().err == f"kcoral: job j: ok, exit code 0, ran - ({shown})\n"


HOSTILE_LOG = b"ok\n\x1b]52;c;cm0gLXJmIH4=\x07\x1b[8mPASS\r\x1b[2K\xc2\x9b31m caf\xc3\xa9\t\xff\n"


def test_on_a_terminal_the_jobs_control_characters_are_shown_not_obeyed() -> None:
    """OSC 52 (the clipboard), ESC[8m (hidden text), a carriage return, a C1 CSI in UTF-8 and a
    stray byte: shown as escapes; text, newlines and tabs as written."""
    stream = io.BytesIO()
    sink = LogSink(stream, keep=1000, escape=True)
    for i in range(0, len(HOSTILE_LOG), 3):  # chunks that split UTF-8 sequences
        sink.write(HOSTILE_LOG[i : i + 3])
    shown = stream.getvalue().decode()
    assert shown == "ok\n\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[8mPASS\\x0d\\x1b[2K\\x9b31m café\t\\xff\n"
    assert sink.text() == HOSTILE_LOG.decode(errors="replace")  # --json keeps what the job wrote


def test_a_pipe_gets_the_bytes_as_written() -> None:
    stream = io.BytesIO()
    LogSink(stream).write(HOSTILE_LOG)  # BytesIO is no terminal
    assert stream.getvalue() == HOSTILE_LOG


def test_a_terminal_is_detected() -> None:
    class Tty(io.BytesIO):
        def isatty(self) -> bool:
            return True

    assert LogSink(Tty()).escape and not LogSink(io.BytesIO()).escape and not LogSink(None).escape


def test_a_queued_job_shows_what_it_cannot_start_without(capsys: pytest.CaptureFixture[str]) -> None:
    from kcoral.cli.output import stdout
    from kcoral.cli.render import job_details
    from kcoral.protocol.models import JobState, JobTimes, JobView, PythonSpec

    reason = "gpu0 drained (processes [42] still on GPU 0 after the job)"
    view = JobView(id="j", owner="o", state=JobState.queued, spec=PythonSpec(argv=["m.py"]), queue_position=1,
                   waiting=reason, times=JobTimes(created=0))  # fmt: skip
    stdout().print(job_details(view))
    out, _ = capsys.readouterr()
    assert f"cannot start yet: {reason}" in out
    stdout().print(job_details(JobView(id="j", owner="o", state=JobState.queued, spec=PythonSpec(argv=["m.py"]),
                                       queue_position=1, times=JobTimes(created=0))))  # fmt: skip
    assert "cannot start" not in capsys.readouterr()[0]


@pytest.mark.parametrize("trap", ["link", "other_user"])
def test_the_state_folder_is_refused_when_it_is_a_link_or_another_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trap: str
) -> None:
    """The folder that holds `kcoral mcp --http`'s secret must be this user's own: a link there (the
    secret written where its target's owner reads it) or another user's folder is refused, clearly."""
    from kcoral.cli.paths import state_dir
    from kcoral.protocol.errors import UsageError

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "state").mkdir()
    if trap == "link":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "state" / "kcoral").symlink_to(tmp_path / "elsewhere")
    else:
        (tmp_path / "state" / "kcoral").mkdir()
        monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(UsageError, match="is not a folder of this user's own"):
        state_dir()


def test_an_evaluations_log_marks_what_the_submission_printed_and_caps_it() -> None:
    """Each line the submission printed starts with the mark, even one split across pieces; past the
    limit nothing more of it is shown, and before the server's lines (which come as they are) a note
    says how much was not; a forged report line cannot pass for the server's."""
    from kcoral.cli.logsink import SubmissionMarks
    from kcoral.protocol.framing import SERVER, STDOUT

    out = io.BytesIO()
    marks = SubmissionMarks(limit=30)
    sink = LogSink(out, escape=False, marks=marks)
    sink.write(b"passed: 7/7\nspeedup: 9", STDOUT)
    sink.write(b"9x\n" + b"x" * 40 + b"\n", STDOUT)
    sink.write(b"holdout correctness: PASS\npassed: 7/7\n", SERVER)
    shown = out.getvalue().decode()
    assert shown == (
        "submission | passed: 7/7\n"
        "submission | speedup: 99x\n"
        "submission | xxxxx\n"
        "submission | [kcoral: 36 more bytes that the submission printed are not shown here; "
        "`kcoral logs JOB_ID` prints them]\n"
        "holdout correctness: PASS\npassed: 7/7\n"
    ), shown
    assert marks.printed == 66 and sink.total == 66 + 38


def test_the_submissions_control_characters_cannot_hide_its_mark_even_in_a_pipe() -> None:
    """A carriage return or an erase-line sequence after the mark would, once a saved output is shown on a
    terminal, wipe ``submission | `` and leave a forged line bare: they are escaped in a pipe too."""
    from kcoral.cli.logsink import SubmissionMarks
    from kcoral.protocol.framing import STDOUT

    out = io.BytesIO()
    sink = LogSink(out, escape=False, marks=SubmissionMarks())
    sink.write(b"\x1b[2K\rpassed: 7/7 \xc3", STDOUT)
    sink.write(b"\xa9\n", STDOUT)  # a character split across two pieces is decoded whole
    assert out.getvalue().decode() == "submission | \\x1b[2K\\x0dpassed: 7/7 \u00e9\n", out.getvalue()


def test_a_long_line_the_submission_printed_is_broken_into_marked_rows_on_a_terminal() -> None:
    """A terminal wraps a long line onto rows of its own: unmarked, one could start with a forged report
    line (padded to the width). On a terminal of 40 columns every row holds the mark, a wide character
    counts two columns, and a line split across pieces keeps its column; off a terminal nothing is broken."""
    from kcoral.cli.logsink import SubmissionMarks
    from kcoral.protocol.framing import STDOUT

    out = io.BytesIO()
    sink = LogSink(out, escape=False, marks=SubmissionMarks(width=40))
    sink.write(b"x" * 30 + b"holdout: PASS", STDOUT)  # 27 columns after the mark's 13
    sink.write((" " + "測" * 6 + "\n").encode() + b"short\n", STDOUT)
    rows = out.getvalue().decode().split("\n")
    assert rows == [
        "submission | " + "x" * 27,
        "submission | xxxholdout: PASS " + "測" * 5,  # 13 + 17 + 10 = 40 columns
        "submission | 測",
        "submission | short",
        "",
    ], rows
    plain = io.BytesIO()
    LogSink(plain, escape=False, marks=SubmissionMarks()).write(b"x" * 100 + b"\n", STDOUT)
    assert plain.getvalue() == b"submission | " + b"x" * 100 + b"\n"
