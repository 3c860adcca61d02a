"""``kcoral doctor``: is everything in place to run jobs? The client's side (its server, its token, the
versions, the clocks), then the server's (its engine, GPUs, images, profilers, disk, the key that signs
its receipts), one line each: ok, warn or fail, and what to do about it. ``--json`` for agents; exit
status 1 when a check fails."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import typer

from kcoral import __version__
from kcoral.cli.commands.common import JsonOption, RemoteOption, TokenOption
from kcoral.cli.floors import floor_words
from kcoral.cli.output import emit_json
from kcoral.protocol.errors import KcoralError
from kcoral.protocol.install import install_hint
from kcoral.protocol.printable import printable

#: the clocks may differ by this much (seconds) before it is worth a warning (job times come from the server)
CLOCK_SKEW_S = 5.0
#: free bytes in the server's data dir under which a check warns, and fails
DISK_WARN = 10 << 30
DISK_FAIL = 1 << 30
#: the most characters of one check's detail or fix printed (the server chose them: a bomb stays one line)
SHOWN_CHARS = 400


@dataclass
class Check:
    name: str
    #: ok | warn | fail
    status: str
    detail: str
    fix: str = ""


def doctor(remote: RemoteOption = None, token: TokenOption = None, json: JsonOption = False) -> None:
    """Check the client's set-up and the server's, one line each (ok / warn / fail, with the fix).

    Exit status: 0 nothing failed (warnings allowed), 1 a check failed.
    """
    health: dict[str, Any] = {}
    checks = run_checks(remote, token, health)
    failed = any(c.status == "fail" for c in checks)
    if json:  # with the server's limits as it runs them (kcoral serve --limit NAME=VALUE sets them)
        limits = {k: health[k] for k in ("limits", "connection_limits") if k in health}
        emit_json({"ok": not failed, "checks": [asdict(c) for c in checks], **limits})
    else:
        for line in check_lines(checks):
            typer.echo(line)
    raise typer.Exit(1 if failed else 0)


def check_lines(checks: list[Check]) -> list[str]:
    """The checks as printed: a line each, and a fix under a check that is not ok. What the server said
    (a task's, a slot's or a workload's name, its versions) is escaped here, once for every check: a
    server is not trusted to send text a terminal may act on, nor of a reasonable length (each text is cut at
    SHOWN_CHARS, saying so; ``--json`` keeps it whole)."""
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{c.status:<4}  {c.name:<{width}}  {_shown(c.detail)}")
        if c.fix and c.status != "ok":
            lines.append(f"{'':<4}  {'':<{width}}  fix: {_shown(c.fix)}")
    return lines


def _shown(text: str) -> str:
    more = len(text) - SHOWN_CHARS
    return printable(text[:SHOWN_CHARS]) + (f" ... ({more} more characters)" if more > 0 else "")


def run_checks(remote: str | None, token: str | None, facts: dict[str, Any] | None = None) -> list[Check]:
    """The checks, in order; ``facts`` gets what the server said of itself (its /v1/health), if it did."""
    checks = [Check("client", "ok", f"kcoral {__version__}, Python {sys.version.split()[0]}")]
    if not remote:
        checks.append(Check("server", "fail", "no server given", "pass --remote URL or set KCORAL_REMOTE"))
        return checks
    from kcoral.cli.client import KcoralClient

    asked = time.time()
    try:
        with KcoralClient(remote, token or None, 15.0) as client:
            health = client.health()
    except KcoralError as exc:
        fix = "is `kcoral serve` running there, and is the URL (scheme, host, port) right?"
        checks.append(Check("server", "fail", f"{remote}: {exc.message}", fix))
        return checks
    answered = time.time()
    if facts is not None:
        facts.update(health)
    checks.append(Check("server", "ok", f"{remote} answers"))
    if "docker" not in health:  # the server tells an unknown token no more than that it wants one
        what = "the server does not know this token" if token else "the server wants a token"
        checks.append(Check("token", "fail", what, "set KCORAL_TOKEN or pass --token (the operator's tokens file)"))
        return checks
    checks.append(Check("token", "ok", "accepted" if health.get("auth") else "not needed (no tokens file there)"))
    checks.append(_versions(health))
    checks.append(_clock(health, (asked + answered) / 2))
    checks.append(_engine(health.get("docker") or {}))
    checks += _job_cgroup(health.get("docker") or {})
    checks += _held_up(health.get("docker") or {})
    checks += _gpus(health)
    checks += _images(health.get("images") or [])
    checks += _profilers(health.get("profiling") or {})
    checks.append(_wake_latency(health.get("wake_latency")))
    checks.append(_disk(health.get("data_dir_free_bytes")))
    checks.append(_receipts(health.get("receipts")))
    checks += _calibrations(health.get("calibration"))
    return checks


def _versions(health: dict[str, Any]) -> Check:
    server = health.get("version")
    if server == __version__:
        return Check("versions", "ok", f"client and server are kcoral {server}")
    fix = f"the client of the server's version ({server}): {install_hint()} at that version" if server else ""
    seen = f"client {__version__}, server {server or 'older than 0.1'}"
    return Check("versions", "warn", seen, fix or "update the server")


def _clock(health: dict[str, Any], local: float) -> Check:
    server = health.get("time")
    if not isinstance(server, int | float):
        return Check("clock", "warn", "the server does not say its time", "update the server")
    skew = float(server) - local
    detail = f"the server's clock is {abs(skew):.1f} s {'ahead' if skew > 0 else 'behind'}"
    if abs(skew) > CLOCK_SKEW_S:
        return Check("clock", "warn", detail, "sync both clocks (timedatectl set-ntp true)")
    return Check("clock", "ok", detail)


def _engine(docker: dict[str, Any]) -> Check:
    if not docker.get("ok"):
        return Check("engine", "fail", f"Docker: {docker.get('error', 'not reachable')}",
                     "start the server's Docker engine (bash scripts/install.sh)")  # fmt: skip
    return Check("engine", "ok", f"Docker {docker.get('version', '?')} ({docker.get('storage', '?')}, "
                 f"cgroup v{docker.get('cgroup', '?')})")  # fmt: skip


def _job_cgroup(docker: dict[str, Any]) -> list[Check]:
    if "job_cgroup" not in docker:
        return []
    if docker.get("job_cpu_weight"):
        return [Check("leased cores", "ok", docker["job_cgroup"])]
    fix = "run the server as root with Docker's cgroupfs driver (a loaded host's evaluations end inconclusive)"
    return [Check("leased cores", "warn", docker["job_cgroup"], fix)]


def _held_up(docker: dict[str, Any]) -> list[Check]:
    """How the judge reads others' work on a candidate's core (runner.jobcgroup.pressure_stalls)."""
    if "pressure_stalls" not in docker:  # an older server
        return []
    if docker["pressure_stalls"] is True:
        return [Check("others' work", "ok", "on a candidate's core: its cgroup's pressure stalls, to the microsecond")]
    detail = "on a candidate's core: its clock ticks (10 ms each): an interval's upper bound rises by their noise"
    return [Check("others' work", "warn", detail, "a cgroup v2 host whose kernel keeps pressure stalls (PSI, 5.13+)")]


def _gpus(health: dict[str, Any]) -> list[Check]:
    leases = health.get("leases") or {}
    if leases.get("cluster"):
        rows = health.get("cluster_slots") or []
        if not rows:
            return [
                Check("hosts", "warn", "no host has joined the cluster", "run `kcoral agent --ray ...` on a GPU host")
            ]
        return [_slot_check(f"{r['host']}/{r['slot']}", f"{r['type']} {r['gpu']}", r["state"]) for r in rows]
    drained = leases.get("drained") or {}
    gpus = health.get("gpus") or []
    if not gpus:
        nvml = (health.get("nvml") or {}).get("error") or ""
        slots = ", ".join(s for s in leases.get("slots", []) if s.startswith("cpu")) or "none"
        detail = f"none: jobs run on CPU slots ({slots})" + (f"; {nvml}" if nvml else "")
        return [Check("gpus", "ok", detail)]
    checks = [Check("gpu mode", "ok", str(health.get("gpu_mode")))]
    for gpu in gpus:
        slot = f"gpu{gpu.get('index')}"
        state = f"drained: {drained[slot]}" if slot in drained else "free" if slot in leases.get("free", []) else "busy"
        checks.append(_slot_check(slot, f"{gpu.get('name')} {gpu.get('uuid')}", state))
    return checks


def _wake_latency(info: Any) -> Check:
    """Whether the server holds the host's cores awake while an evaluation runs (runner.wakeqos)."""
    if not isinstance(info, dict):
        return Check("cpu wake-up", "warn", "the server does not say", "update the server")
    held = str(info.get("held", ""))
    if info.get("ok"):
        return Check("cpu wake-up", "ok", held)
    fix = info.get("fix")
    if not isinstance(fix, str) or not fix:  # a server before it said the fix
        fix = "run the server as root on the host (it opens /dev/cpu_dma_latency)"
    return Check("cpu wake-up", "warn", f"{held}: a timed call may pay a core's wake-up on one side only", fix)


def _slot_check(name: str, what: str, state: str) -> Check:
    if state.startswith("drained"):
        return Check(name, "warn", f"{what}: {state}", "clean the GPU (nvidia-smi), then restart the server or agent")
    return Check(name, "ok", f"{what}: {state}")


def _images(images: list[dict[str, Any]]) -> list[Check]:
    checks = []
    for image in images:
        ref = image.get("ref", "?")
        if image.get("present"):
            checks.append(Check("image", "ok", f"{ref} {image.get('digest', '')}"))
        else:
            checks.append(Check("image", "fail", f"{ref}: {image.get('error', 'absent')}",
                                "on the server: kcoral images build (README \"Set up\")"))  # fmt: skip
    return checks


def _profilers(profiling: dict[str, Any]) -> list[Check]:
    checks = []
    for tool in ("ncu", "iket", "sanitizer", "timeline", "proton"):
        info = profiling.get(tool)
        if isinstance(info, dict):
            if info.get("ok"):
                where = str(info.get("image") or info.get("path") or "available")
                version = f" (version {info['version']})" if info.get("version") else ""
                note = f"; {info['note']}" if info.get("note") else ""
                checks.append(Check(tool, "ok", where + version + note))
            else:
                checks.append(Check(tool, "warn", str(info.get("reason") or "not available"), "see docs/profiling.md"))
    return checks


def _calibrations(rows: object) -> list[Check]:
    """Each slot's A/A calibration of each task (tasks.calibration), as the server has it now."""
    if rows is None:
        return []  # a server from before calibrations
    if not rows or not isinstance(rows, list):
        return [Check("calibration", "warn", "no A/A calibration on this server: an evaluation's interval is that "
                      "request's alone", "run kcoral calibrate TASK")]  # fmt: skip
    checks = []
    for row in rows:
        try:
            where, floors = f"{row['task']} on slot {row['slot']}", row["workloads"]
            detail = "; ".join(floor_words(w, f) for w, f in floors.items())
        except (KeyError, TypeError, ValueError, AttributeError):
            checks.append(Check("calibration", "warn", "the server's calibrations are unreadable", "update the client"))
            continue
        if detail:
            checks.append(Check("calibration", "ok", f"{where}: {detail}"))
        else:
            checks.append(Check("calibration", "warn", f"{where}: too few recent A/A requests for a floor "
                                f"({row.get('requests')})", f"run kcoral calibrate {row['task']}"))  # fmt: skip
    return checks


def _receipts(signing: object) -> Check:
    """Who signs the evaluations' receipts, with which public key (kcoral verify checks them)."""
    if not isinstance(signing, dict) or not signing.get("key_id"):
        return Check("receipts", "warn", "the server does not sign its receipts", "update the server")
    return Check(
        "receipts",
        "ok",
        f"signed by server {signing.get('server')} with key {signing.get('key_id')} ({signing.get('algorithm')} "
        f"public key {signing.get('public_key')}); {signing.get('keys')} key(s) at GET /v1/keys: kcoral verify "
        "RECEIPT --remote URL",
    )


def _disk(free: object) -> Check:
    if not isinstance(free, int):
        return Check("disk", "warn", "the server does not say its free space", "update the server")
    detail = f"{free / (1 << 30):.1f} GiB free in the data dir"
    if free < DISK_FAIL:
        return Check("disk", "fail", detail, "free space under the server's data dir: jobs cannot keep their files")
    if free < DISK_WARN:
        return Check("disk", "warn", detail, "free space under the server's data dir")
    return Check("disk", "ok", detail)
