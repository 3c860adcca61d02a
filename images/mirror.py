"""Find the Debian mirror that apt on this host already uses (for debootstrap)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kcoral.images.errors import ImageBuildError

MIRROR_ENV = "KCORAL_DEBIAN_MIRROR"
_SOURCES_DIR = Path("/etc/apt")


@dataclass(frozen=True)
class AptSource:
    uri: str
    suites: tuple[str, ...]
    signed_by: str | None = None


def _one_line_sources(text: str) -> list[AptSource]:
    out: list[AptSource] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        signed_by = None
        m = re.match(r"deb\s+\[([^\]]*)\]\s+(.*)", line)
        if m:
            for opt in m.group(1).split():
                key, _, val = opt.partition("=")
                if key == "signed-by":
                    signed_by = val
            rest = m.group(2).split()
        else:
            rest = line.split()[1:]
        if len(rest) >= 2:
            out.append(AptSource(rest[0], (rest[1],), signed_by))
    return out


def _deb822_sources(text: str) -> list[AptSource]:
    out: list[AptSource] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for raw in stanza.splitlines():
            if raw.startswith("#") or ":" not in raw or raw[:1].isspace():
                continue
            key, _, val = raw.partition(":")
            fields[key.strip().lower()] = val.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        signed = fields.get("signed-by")
        signed_by = signed if signed and signed.startswith("/") else None
        for uri in fields.get("uris", "").split():
            out.append(AptSource(uri, tuple(fields.get("suites", "").split()), signed_by))
    return out


def apt_sources(root: Path = _SOURCES_DIR) -> list[AptSource]:
    """All ``deb`` entries of sources.list, sources.list.d/*.list and *.sources, in apt's order."""
    files = [root / "sources.list"]
    listd = root / "sources.list.d"
    if listd.is_dir():
        files += sorted(p for p in listd.iterdir() if p.suffix in (".list", ".sources"))
    out: list[AptSource] = []
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        out += _deb822_sources(text) if path.suffix == ".sources" else _one_line_sources(text)
    return out


def debian_mirror(suite: str = "bookworm") -> AptSource:
    """The mirror to debootstrap ``suite`` from: $KCORAL_DEBIAN_MIRROR, else the host's apt source."""
    override = os.environ.get(MIRROR_ENV)
    if override:
        return AptSource(override, (suite,))
    sources = apt_sources()
    for src in sources:  # a source that serves exactly this suite
        if suite in src.suites:
            return src
    for src in sources:  # any plain Debian archive (not the security one)
        if src.uri.rstrip("/").endswith("/debian"):
            return AptSource(src.uri, (suite,), src.signed_by)
    raise ImageBuildError(
        f"no Debian mirror for {suite!r} found in /etc/apt/sources.list*; set {MIRROR_ENV}=http://<mirror>/debian"
    )
