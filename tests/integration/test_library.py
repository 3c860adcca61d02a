"""``from kcoral import Client`` against a real server: README's agent loop as written, typed results,
errors with the CLI's exit codes, and detached jobs finished later."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from kcoral import Client, KcoralError
from kcoral.protocol.errors import ServerUnreachable
from tests.conftest import RunningServer, quick_tasks
from tests.scored import host_unscored_failure, until_scored

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(server_factory: Callable[..., RunningServer], tmp_path_factory: pytest.TempPathFactory) -> RunningServer:
    """demo/softmax timed briefly (tests.conftest.quick_tasks): README's loop is checked to run as written
    and print what it says, not for the size of the score it prints."""
    return server_factory(tasks_dirs=(quick_tasks(tmp_path_factory.mktemp("tasks")),))


def readme_loop() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## From a program") :]
    return section[section.index("```python\n") + len("```python\n") : section.index("\n```\n")]


def test_the_readme_agent_loop_runs_as_written(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCORAL_REMOTE", server.url)
    monkeypatch.chdir(tmp_path)
    code = readme_loop()
    assert len(code.splitlines()) <= 18

    def loop() -> list[str]:
        printed = io.StringIO()
        names: dict[str, object] = {}
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "README.md", "exec"), names)  # noqa: S102 - README's own code, run as a reader would
        names["kc"].close()  # type: ignore[attr-defined]  # a script's exit would close it
        return printed.getvalue().splitlines()

    # the loop again while the host leaves its evaluation unscored: its line then says why (tests.scored)
    lines = until_scored(loop, lambda lines: host_unscored_failure(lines[1] if len(lines) > 1 else ""))
    assert lines[0] == "fix: workload standard: ERROR: AttributeError: module 'solution' has no attribute 'setup'"
    assert re.fullmatch(r"passed \d+\.\d+", lines[1]), lines


def test_results_are_typed_and_errors_carry_the_cli_exit_code(server: RunningServer, tmp_path: Path) -> None:
    with Client(server.url) as kc:
        (tmp_path / "s").mkdir()
        script = "import os, sys\nprint('hi')\nopen(os.environ['KCORAL_OUTPUT_DIR'] + '/o', 'w').write('1')\n"
        (tmp_path / "s" / "m.py").write_text(script + "print('err', file=sys.stderr)\nsys.exit(4)\n")
        (tmp_path / "s" / "__pycache__").mkdir()
        result = kc.run(["m.py"], send=tmp_path / "s", output_dir=tmp_path / "out")
        # both streams in the log, in the order the engine got them (stdout is block-buffered: either order)
        assert sorted(result.log.splitlines()) == ["err", "hi"] and result.stderr == "err\n"
        assert result.not_sent == ["__pycache__/"]
        assert result.exit_code == 4 and not result.ok and result.failure.startswith("exit")
        assert [f.read_text() for f in result.files] == ["1"] and result.job.times.phases["job"] > 0
        pending = kc.run(["-c", "print(2)"], wait=False)
        assert kc.result(pending.id).log == "2\n"  # a detached job, finished later
        with pytest.raises(KcoralError) as info:
            kc.evaluate("demo/softmax", tmp_path / "s")  # no solution.py
        assert info.value.exit_code == 2
        # one .py file is a submission too, sent as the task's solution.py and labelled after the file
        one = tmp_path / "one_file.py"
        one.write_text((REPO / "tasks" / "demo" / "softmax" / "template.py").read_text())
        checked = kc.evaluate("demo/softmax", one, check=True, output_dir=tmp_path / "o1")
        assert checked.ok and checked.job.spec.label.startswith("one_file-"), checked.failure
        with pytest.raises(KcoralError, match="not a directory") as info:
            kc.run(["m.py"], send=tmp_path / "missing")
        assert info.value.exit_code == 2 and not (tmp_path / "missing").exists()
    with pytest.raises(ServerUnreachable) as unreachable:
        Client("http://127.0.0.1:9").tasks()
    assert unreachable.value.exit_code == 69
