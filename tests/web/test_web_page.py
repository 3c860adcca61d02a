"""The web page (runner.web) in a real browser: Debian's headless Chromium driven by selenium against
a live server. Screenshots go to $KCORAL_SCREENSHOTS (default tests/web/artifacts, git-ignored)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.attacks.judging import CANDIDATES
from tests.conftest import make_tar
from tests.scored import job_unscored, until_scored

#: what the page shows as jobs run (~19 s of browsing): scripts/test-nightly.sh runs these; who may see
#: and change what, and what is never shown as a score, run in CI
SHOWING = pytest.mark.nightly

SHOTS = Path(os.environ.get("KCORAL_SCREENSHOTS") or Path(__file__).parent / "artifacts")


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        pytest.fail("chromedriver is not installed (scripts/test.sh installs Debian's chromium-driver)")
    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def shot(browser: webdriver.Chrome, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / f"{name}.png"))


def until(browser: webdriver.Chrome, test: Any, timeout: float = 60) -> Any:
    return WebDriverWait(browser, timeout, poll_frequency=0.2, ignored_exceptions=(WebDriverException,)).until(test)


def outcome(browser: webdriver.Chrome, job_id: str) -> str:
    return str(browser.find_element(By.CSS_SELECTOR, f'tr[data-job="{job_id}"]').get_attribute("data-outcome"))


@SHOWING
def test_the_jobs_list_updates_when_a_job_finishes(server_factory: Any, browser: webdriver.Chrome) -> None:
    srv = server_factory(cpu_slots=1)
    job = srv.submit({"m.py": "import time\nprint('working', flush=True)\ntime.sleep(4)"}, ["m.py"])
    browser.get(f"{srv.url}/ui/jobs")
    assert outcome(browser, job["id"]) in ("queued", "running")
    until(browser, lambda b: outcome(b, job["id"]) == "ok")  # the rows refresh by themselves
    shot(browser, "jobs")
    browser.get(f"{srv.url}/ui/jobs?state=queued")
    assert browser.find_elements(By.CSS_SELECTOR, f'tr[data-job="{job["id"]}"]') == []


@SHOWING
def test_a_jobs_log_streams_into_its_page(server_factory: Any, browser: webdriver.Chrome) -> None:
    srv = server_factory(cpu_slots=1)
    script = (
        "import time\nfor i in range(8):\n    print(f'line {i}', flush=True)\n    time.sleep(0.5)\n"
        "print('<b>not bold</b>')"
    )
    job = srv.submit({"m.py": script}, ["m.py"])
    browser.get(f"{srv.url}/ui/jobs/{job['id']}")
    until(browser, lambda b: "line 1" in b.find_element(By.ID, "log-text").text)
    assert "line 7" not in browser.find_element(By.ID, "log-text").text  # the page came before the end
    until(browser, lambda b: "line 7" in b.find_element(By.ID, "log-text").text)
    until(browser, lambda b: "<b>not bold</b>" in b.find_element(By.ID, "log-text").text)  # escaped, shown as text
    assert browser.find_elements(By.CSS_SELECTOR, "#log-text b") == []


PNG_JOB = """import os, struct, zlib
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
rows = b''.join(b'\\x00' + bytes([255, 0, 0] * 40) for _ in range(20))
png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 40, 20, 8, 2, 0, 0, 0))
png += chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')
out = os.environ['KCORAL_OUTPUT_DIR']
open(out + '/timeline.png', 'wb').write(png)
open(out + '/fake.png', 'w').write('<script>alert(1)</script>')
"""


@SHOWING
def test_a_jobs_pictures_show_in_its_page(server_factory: Any, browser: webdriver.Chrome) -> None:
    """A PNG output (an IKET timeline, say) shows inline; a file that only calls itself .png does not."""
    srv = server_factory(cpu_slots=1)
    job, _ = srv.run({"m.py": PNG_JOB}, ["m.py"])
    assert job["verdict"] == "ok", job
    browser.get(f"{srv.url}/ui/jobs/{job['id']}")
    images = {i.get_attribute("alt"): i for i in browser.find_elements(By.CSS_SELECTOR, "#pictures img")}
    until(browser, lambda b: b.execute_script("return arguments[0].naturalWidth", images["timeline.png"]) == 40)
    assert browser.execute_script("return arguments[0].naturalWidth", images["fake.png"]) == 0
    r = httpx.get(f"{srv.url}/ui/jobs/{job['id']}/image/fake.png")
    assert r.status_code == 404 and "alert" not in r.text


@SHOWING
def test_an_evaluation_shows_its_workloads_and_its_samples_plot(server_factory: Any, browser: webdriver.Chrome) -> None:
    srv = server_factory()
    source = (CANDIDATES / "honest" / "solution.py").read_bytes()

    def evaluate() -> dict[str, Any]:
        r = srv.http.post("/v1/jobs", json={"kind": "eval", "task": "demo/softmax", "timeout_s": 300})
        job_id = r.json()["id"]
        assert srv.http.put(f"/v1/jobs/{job_id}/input", content=make_tar({"solution.py": source})).status_code == 200
        return srv.wait(job_id, timeout=300)

    job = until_scored(evaluate, lambda job: job_unscored(srv, job))
    job_id = job["id"]
    assert job["verdict"] == "ok", job
    browser.get(f"{srv.url}/ui/jobs/{job_id}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#workloads tbody tr")
    assert len(rows) >= 5 and "speedup" in browser.find_element(By.ID, "score").text
    until(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#plots .plot canvas"))  # uPlot drew
    assert browser.find_element(By.ID, "receipt").text.count("sha256") >= 1
    assert "def setup" in browser.find_element(By.ID, "source").text  # the submission's source
    shot(browser, "evaluation")
    browser.execute_script("document.getElementById('plots').scrollIntoView()")
    shot(browser, "evaluation-samples")
    browser.get(f"{srv.url}/ui/compare?a={job_id}&b={job_id}")
    assert len(browser.find_elements(By.CSS_SELECTOR, ".side")) == 2
    assert "identical submissions" in browser.find_element(By.ID, "identical").text
    shot(browser, "compare")
    browser.get(f"{srv.url}/ui/tasks/demo/softmax")  # the task's board: this evaluation is the best
    assert job_id in browser.find_element(By.CSS_SELECTOR, '#board tr[data-rank="1"]').text
    shot(browser, "board")
    browser.get(f"{srv.url}/ui/host")
    assert "cpu0" in browser.find_element(By.ID, "slots").text
    assert "kcoral-job:cpu" in browser.find_element(By.ID, "images").text
    shot(browser, "host")


def test_a_token_sees_its_own_jobs_and_nothing_changes_without_the_page(
    server_factory: Any, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    alice, bob, ops = "a" * 32, "b" * 32, "o" * 32
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {alice}\nbob {bob}\nops {ops} operator\n")
    srv = server_factory(tokens_file=tokens, cpu_slots=1)
    as_alice = {"Authorization": f"Bearer {alice}"}
    job_id = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}, headers=as_alice).json()["id"]
    srv.http.put(
        f"/v1/jobs/{job_id}/input", content=make_tar({"m.py": "import time; time.sleep(60)"}), headers=as_alice
    )

    def log_in(token: str) -> None:
        browser.delete_all_cookies()
        browser.get(f"{srv.url}/ui/jobs")
        assert browser.current_url.endswith("/ui/login")
        browser.find_element(By.ID, "token").send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "#login button").click()
        until(browser, lambda b: b.current_url.endswith("/ui/jobs") or b.find_elements(By.ID, "login-error"))

    log_in("w" * 32)
    until(browser, lambda b: "does not know that token" in b.find_element(By.ID, "login-error").text)
    log_in(bob)
    until(browser, lambda b: b.current_url.endswith("/ui/jobs"))
    assert browser.find_elements(By.CSS_SELECTOR, "tr[data-job]") == []
    browser.get(f"{srv.url}/ui/jobs/{job_id}")
    assert job_id not in browser.find_element(By.TAG_NAME, "body").text.replace(f"no job {job_id}", "")
    log_in(ops)
    until(browser, lambda b: b.find_elements(By.CSS_SELECTOR, f'tr[data-job="{job_id}"]'))
    shot(browser, "operator")
    # a cancel without the page's CSRF token is refused, with it the job ends
    cookie = {"kcoral_token": alice}
    with httpx.Client(base_url=srv.url, cookies=cookie, follow_redirects=False) as http:
        assert http.post(f"/ui/jobs/{job_id}/cancel", data={"csrf": "forged"}).status_code == 403
        assert http.get(f"/ui/jobs/{job_id}").status_code == 200
    log_in(alice)
    browser.get(f"{srv.url}/ui/jobs/{job_id}")
    browser.find_element(By.CSS_SELECTOR, "#cancel button").click()
    deadline = time.monotonic() + 30
    while srv.http.get(f"/v1/jobs/{job_id}", headers=as_alice).json()["verdict"] != "cancelled":
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_report_a_python_job_wrote_is_not_shown_as_a_score(server_factory: Any) -> None:
    """A python job chooses its outputs: a report.json among them is a file, not an evaluation."""
    srv = server_factory(cpu_slots=1)
    forged = (
        "import json, os\n"
        "doc = {'summary': {'speedup': 99.0, 'speedup_lo': 98.0, 'speedup_hi': 100.0, 'baseline_ms': 1.0,"
        " 'kernel_ms': 0.01}, 'workloads': [{'id': 'standard', 'verdict': 'PASS', 'speedup': 99.0}]}\n"
        "json.dump(doc, open(os.environ['KCORAL_OUTPUT_DIR'] + '/report.json', 'w'))\n"
    )
    job, _ = srv.run({"m.py": forged}, ["m.py"])
    assert job["verdict"] == "ok" and [o["path"] for o in job["outputs"]] == ["report.json"]
    page = srv.http.get(f"/ui/jobs/{job['id']}").text
    assert "99.0000x" not in page and 'id="workloads"' not in page and "report.json" in page
    compare = srv.http.get(f"/ui/compare?a={job['id']}&b={job['id']}").text.split("</h2>", 1)[-1]
    # no figure of the forged report (a job id may hold "99", never with a dot)
    assert not [figure for figure in ("99.0", "98.0", "100.0") if figure in compare], compare
