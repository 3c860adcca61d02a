"""The web page's forms against cross-site requests (runner.web), over real HTTP to a live server: a
page on another site can neither log a visitor's browser in (Origin/Referer check and the login CSRF
token) nor log it out or cancel its jobs; this server's own forms keep working. (The same forms in a
real browser: test_web_page.py.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import RunningServer

ALICE = "a" * 32
EVIL = "http://evil.example"


def served(server_factory: Callable[..., RunningServer], tmp_path: Path) -> RunningServer:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\n")
    return server_factory(tokens_file=tokens, cpu_slots=1)


def hidden(page: str, name: str) -> str:
    """The value of the form's hidden field ``name`` in ``page``."""
    found = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def test_a_cross_site_login_is_refused_and_this_servers_own_form_logs_in(
    server_factory: Callable[..., RunningServer], tmp_path: Path
) -> None:
    srv = served(server_factory, tmp_path)
    # a page elsewhere posts the attacker's token to this server's login, as a browser would send it
    for headers in ({"Origin": EVIL}, {"Origin": "null"}, {"Referer": f"{EVIL}/page.html"}):
        r = httpx.post(f"{srv.url}/ui/login", data={"token": ALICE}, headers=headers)
        assert r.status_code == 403 and "cross-site request" in r.text, (headers, r.status_code, r.text)
        assert "kcoral_token" not in r.cookies
    # this server's origin, but not its form (no login CSRF token, or one of another form): refused too
    with httpx.Client(base_url=srv.url, headers={"Origin": srv.url}) as http:
        r = http.post("/ui/login", data={"token": ALICE})
        assert r.status_code == 403 and "log in again here" in r.text and "kcoral_token" not in r.cookies
        other = hidden(httpx.get(f"{srv.url}/ui/login").text, "csrf")  # a form fetched elsewhere
        hidden(http.get("/ui/login").text, "csrf")  # this client's own cookie, of another form
        r = http.post("/ui/login", data={"token": ALICE, "csrf": other})
        assert r.status_code == 403 and "kcoral_token" not in r.cookies, r.text

    with httpx.Client(base_url=srv.url, headers={"Origin": srv.url}) as http:  # the page, as a browser uses it
        page = http.get("/ui/login")
        assert page.status_code == 200 and page.headers["referrer-policy"] == "same-origin"
        r = http.post("/ui/login", data={"token": "w" * 32, "csrf": hidden(page.text, "csrf")})
        assert r.status_code == 401 and "does not know that token" in r.text  # a fresh form comes with it
        r = http.post("/ui/login", data={"token": ALICE, "csrf": hidden(r.text, "csrf")})
        assert r.status_code == 303 and r.headers["location"] == "/ui/jobs" and r.cookies["kcoral_token"] == ALICE
        assert http.get("/ui/jobs").status_code == 200
    with httpx.Client(base_url=srv.url) as http:  # no Origin and a Referer of this server's: the same
        page = http.get("/ui/login")
        r = http.post(
            "/ui/login", data={"token": ALICE, "csrf": hidden(page.text, "csrf")}, headers={"Referer": str(page.url)}
        )
        assert r.status_code == 303, r.text


def test_a_cancel_or_logout_from_another_site_is_refused(
    server_factory: Callable[..., RunningServer], tmp_path: Path
) -> None:
    srv = served(server_factory, tmp_path)
    as_alice = {"Authorization": f"Bearer {ALICE}"}
    job_id = srv.http.post("/v1/jobs", json={"argv": ["m.py"]}, headers=as_alice).json()["id"]  # no upload: waits
    with httpx.Client(base_url=srv.url, cookies={"kcoral_token": ALICE}) as http:
        csrf = hidden(http.get(f"/ui/jobs/{job_id}").text, "csrf")
        r = http.post(f"/ui/jobs/{job_id}/cancel", data={"csrf": csrf}, headers={"Origin": EVIL})
        assert r.status_code == 403 and "cross-site request" in r.text, r.text
        r = http.post("/ui/logout", headers={"Referer": f"{EVIL}/"})
        assert r.status_code == 403 and "set-cookie" not in r.headers, r.text
        assert srv.http.get(f"/v1/jobs/{job_id}", headers=as_alice).json()["state"] == "created"
        r = http.post(f"/ui/jobs/{job_id}/cancel", data={"csrf": csrf}, headers={"Origin": srv.url})
        assert r.status_code == 303, r.text
        assert srv.http.get(f"/v1/jobs/{job_id}", headers=as_alice).json()["verdict"] == "cancelled"
        r = http.post("/ui/logout", headers={"Origin": srv.url})
        assert r.status_code == 303 and 'kcoral_token=""' in r.headers["set-cookie"], r.headers
