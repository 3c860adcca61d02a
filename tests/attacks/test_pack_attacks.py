"""Cheats of the KernelBench and GPU MODE formats against kcoral's judge (issue 32, item 4), each a
ModelNew of our own for the CPU problem kernelbench/level1/1_Scale or a custom_kernel for
gpumode/cpu_pack/vecadd_py (tests/fixtures/packs), evaluated through a real server; each asserts its
own outcome. Outputs are judged by the supervisor, outside
the candidate's process, on inputs it draws: what the candidate's process claims or patches is not
what is judged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from kcoral.cli.main import run
from tests.conftest import RunningServer, server_settings, serving

#: every evaluation here fails a check or is a check: no timing asserted (scripts/test.sh)
pytestmark = pytest.mark.concurrent

PACKS = Path(__file__).resolve().parents[1] / "fixtures" / "packs"
TASK = "kernelbench/level1/1_Scale"
HEAD = "import threading\n\nimport torch\nimport torch.nn as nn\n\n\n"
MODEL = """class ModelNew(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
{body}
"""
#: name -> (forward's body, a module-level prelude, the reason the check gives)
CHECKED = {
    # the input handed back (right only for an identity)
    "return_input": ("        return x", "", "torch.allclose's rule"),
    # a tensor subclass standing for work not done (a lazy value): refused as it is handed over
    "lazy_subclass": (
        "        return Lazy(x * self.factor)",
        "class Lazy(torch.Tensor):\n    pass\n\n\n",
        "is a solution.Lazy, not a torch.Tensor",
    ),
    # work finished by a thread after the call returned: the copy into the judge's buffer was taken at return
    "thread_after_return": (
        "        out = torch.zeros_like(x)\n"
        "        threading.Thread(target=lambda: (__import__('time').sleep(0.2), out.copy_(x * self.factor))).start()\n"
        "        return out",
        "",
        "torch.allclose's rule",
    ),
    # the candidate's process patches torch's comparisons: the judge's are in another process
    "patch_allclose": (
        "        return x * (self.factor + 1)",
        "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n\n\n",
        "torch.allclose's rule",
    ),
    # the judge's output buffer, reached from the worker's frames, written and returned: the worker's copy
    # into it would be a copy onto itself (skipped), a call's cost the baseline pays and it would not
    "output_in_the_judges_buffer": (
        "        f = sys._getframe(1)\n"
        "        while 'outs' not in f.f_locals:\n"
        "            f = f.f_back\n"
        "        out = f.f_locals['outs']['out0']\n"
        "        torch.mul(x, self.factor, out=out)\n"
        "        return out",
        "import sys\n\n\n",
        "output 0 is held in the judge's own output buffer",
    ),
    # an error whose text holds a lone surrogate: the candidate's error, shown escaped (it made the whole
    # result unreadable to the server: an infrastructure error, on any task)
    "error_with_a_lone_surrogate": ("        raise RuntimeError('a\\ud800b')", "", "RuntimeError: a\\ud800b"),
    # a precision downcast beyond the tolerance (float8: ~6% off): the rule is the problem's, in fp32
    "downcast_float8": (
        "        return (x.to(torch.float8_e4m3fn).to(x.dtype)) * self.factor",
        "",
        "torch.allclose's rule",
    ),
}


GPUMODE_TASK = "gpumode/cpu_pack/vecadd_py"
#: name -> (GPU MODE's submission.py, the reason the check gives); vecadd's data is (a, b, out), out preallocated
GPUMODE_CHECKED = {
    # an input handed back instead of the sum
    "gm_return_input": ("def custom_kernel(data):\n    return data[0]\n", "mismatch: largest difference"),
    # the preallocated output returned unwritten: poisoned by the judge, never a stale answer
    "gm_unwritten_output": ("def custom_kernel(data):\n    return data[2]\n", "mismatch: largest difference nan"),
    # the problem's own check patched in the candidate's process (its utils and reference are importable
    # there): the check that judges runs in the supervisor, on its own copy
    "gm_patch_the_check": (
        "import reference\nimport utils\n\n"
        "utils.match_reference = lambda *a, **k: (True, '')\n"
        "reference.check_implementation = lambda *a, **k: (True, '')\n\n\n"
        "def custom_kernel(data):\n    a, b, out = data\n    out.copy_(a)\n    return out\n",
        "mismatch: largest difference",
    ),
    # the sum finished by a thread after returning: the judge's copy was taken at the return
    "gm_thread_after_return": (
        "import threading\nimport time\n\n\n"
        "def custom_kernel(data):\n    a, b, out = data\n    out.zero_()\n"
        "    threading.Thread(target=lambda: (time.sleep(0.2), out.copy_(a + b))).start()\n    return out\n",
        "mismatch: largest difference",
    ),
}


@pytest.fixture(scope="module")
def pack_server(
    docker_client: docker.DockerClient, job_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    settings = server_settings(tmp_path_factory.mktemp("packattacks"), job_image, tasks_dirs=(PACKS,))
    with serving(docker_client, settings) as server:
        yield server


def write(folder: Path, body: str, prelude: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "solution.py").write_text(HEAD + prelude + MODEL.format(body=body))
    return folder


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_a_cheat_fails_the_check_with_its_reason(name: str, pack_server: RunningServer, capfd, tmp_path: Path) -> None:
    body, prelude, reason = CHECKED[name]
    folder = write(tmp_path / name, body, prelude)
    code = run(["eval", TASK, str(folder), "--remote", pack_server.url, "-o", str(tmp_path / "o"), "--check"])
    out, err = capfd.readouterr()
    assert code == 1 and reason in out + err, (out + err)[-3000:]


@pytest.mark.parametrize("name", sorted(GPUMODE_CHECKED))
def test_a_gpumode_cheat_fails_the_problems_own_check(
    name: str, pack_server: RunningServer, capfd, tmp_path: Path
) -> None:
    source, reason = GPUMODE_CHECKED[name]
    folder = tmp_path / name
    folder.mkdir()
    (folder / "submission.py").write_text(source)
    code = run(["eval", GPUMODE_TASK, str(folder), "--remote", pack_server.url, "-o", str(tmp_path / "o"), "--check"])
    out, err = capfd.readouterr()
    assert code == 1 and reason in out + err, (out + err)[-3000:]


def test_an_output_cached_by_shape_fails_the_holdout(pack_server: RunningServer, capfd, tmp_path: Path) -> None:
    """Every call of a problem has the same shapes: a result kept by shape (across the models the worker
    builds) is the first call's, on decoy inputs; the secret probes' inputs are fresh draws."""
    folder = write(
        tmp_path / "cache",
        "        key = tuple(x.shape)\n"
        "        if key not in CACHE:\n"
        "            CACHE[key] = x * self.factor\n"
        "        return CACHE[key]",
        "CACHE = {}\n\n\n",
    )
    code = run(["eval", TASK, str(folder), "--remote", pack_server.url, "-o", str(tmp_path / "o"), "--json"])
    out, err = capfd.readouterr()
    report = json.loads(out)
    assert code == 1 and report["holdout"] == "FAIL" and report["holdout_failure"] == "FAIL", (out + err)[-3000:]
    assert report["suite"] == {"format": "kernelbench", "correct": False}


def test_the_problems_own_model_passes_beside_them(pack_server: RunningServer, capfd, tmp_path: Path) -> None:
    folder = write(tmp_path / "honest", "        return x * self.factor")
    code = run(["eval", TASK, str(folder), "--remote", pack_server.url, "-o", str(tmp_path / "o"), "--check"])
    out, err = capfd.readouterr()
    assert code == 0 and "passed: 3/3" in out, (out + err)[-3000:]


def test_weights_that_pass_a_check_in_its_own_process_are_still_refused(
    pack_server: RunningServer, capfd, tmp_path: Path
) -> None:
    """The weights check is the supervisor's: a ModelNew whose weights are drawn after another draw (not
    Model's), in a process where torch.equal always says True (where the comparison once ran), is refused
    before any call, the parameter named."""
    task = "kernelbench/level2/1_Linear_Tanh"
    assert run(["init", task, str(tmp_path / "t"), "--remote", pack_server.url]) == 0
    source = (tmp_path / "t" / "solution.py").read_text()
    line = "self.linear = nn.Linear(in_features, out_features)"
    assert line in source
    folder = tmp_path / "patched"
    folder.mkdir()
    (folder / "solution.py").write_text(
        source.replace(line, "torch.rand(1)\n        " + line) + "\ntorch.equal = lambda *a, **k: True\n"
    )
    code = run(["eval", task, str(folder), "--remote", pack_server.url, "-o", str(tmp_path / "o"), "--check"])
    out, err = capfd.readouterr()
    assert code == 1 and "is not Model's: linear.bias holds other values" in out + err, (out + err)[-3000:]


#: name -> (forward's body, a module-level prelude, an ``__init__`` addition, a line the candidate prints
#: when its cheat found what it looked for): each evaluated in full, and none may pass
NOT_PASSING = {
    # the output kept by its input's address: the judge writes fresh values into the same buffers
    "cache_by_data_ptr": (
        "        key = x.data_ptr()\n"
        "        if key not in CACHE:\n"
        "            CACHE[key] = x * self.factor\n"
        "        return CACHE[key]",
        "CACHE = {}\n\n\n",
        "",
        "",
    ),
    # work in __init__: the outputs of the inputs get_inputs() gives under the seeds a harness in the
    # process would use (KernelBench's 42, small ones), made before any call, returned without work; the
    # judge's seeds are drawn per request and never reach the candidate
    "outputs_made_in_init": (
        "        for seed, (known, out) in self.known.items():\n"
        "            if torch.equal(known, x):\n"
        "                print('INIT-HIT', seed, flush=True)\n"
        "                return out\n"
        "        print('INIT-MISS', flush=True)\n"
        "        return self.known[42][1]",
        "",
        "        self.known = {}\n"
        "        for seed in [42, *range(100)]:\n"
        "            torch.manual_seed(seed)\n"
        "            known = torch.randn(256, 512)\n"
        "            self.known[seed] = (known, known * factor)\n",
        "INIT-HIT",
    ),
    # the reference's output read rather than computed: every tensor of the output's shape this process
    # holds (the baseline runs in another process, in another container), then anything under /dev/shm,
    # /tmp and the judge's paths; what it found is handed back, else zeros
    "read_the_reference_output": (
        "        import gc, os\n"
        "        seen = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.shape == x.shape\n"
        "                and o.data_ptr() != x.data_ptr()]\n"
        "        files = [os.path.join(d, f) for d in ('/dev/shm', '/tmp', '/judge-in', '/judge') if os.path.isdir(d)\n"
        "                 for f in os.listdir(d)]\n"
        "        print('REF-SCAN', len(seen), 'tensors', files, flush=True)\n"
        "        for o in seen:\n"
        "            if torch.allclose(o, x * self.factor):\n"
        "                print('REF-FOUND', flush=True)\n"
        "                return o.clone()\n"
        "        return torch.zeros_like(x)",
        "",
        "",
        "REF-FOUND",
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_PASSING))
def test_a_cheat_never_passes(name: str, pack_server: RunningServer, capfd, tmp_path: Path) -> None:
    """Evaluated in full (holdout, checks, timing): each fails, and where it prints what its cheat found,
    it found nothing. (read_the_reference_output's own check, x * factor, is the candidate's work and
    not the judge's: it only names a tensor that already holds the answer.)"""
    body, prelude, init, found = NOT_PASSING[name]
    folder = tmp_path / name
    folder.mkdir()
    model = MODEL.format(body=body).replace("        self.factor = factor\n", "        self.factor = factor\n" + init)
    (folder / "solution.py").write_text(HEAD + prelude + model)
    code = run(["eval", TASK, str(folder), "--remote", pack_server.url, "-o", str(tmp_path / "o"), "--json"])
    out, err = capfd.readouterr()
    report = json.loads(out)
    assert code == 1 and report["suite"]["correct"] is False, (out + err)[-3000:]
    job = json.loads(next((tmp_path / "o").rglob("receipt.json")).read_text())["job"]
    printed = pack_server.log(job)  # what the submission printed, in the job's log
    assert not found or (found.split("-")[0] + "-" in printed and found not in printed), printed[-3000:]
