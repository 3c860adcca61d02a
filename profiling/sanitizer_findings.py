"""What a compute-sanitizer report says, read from either of its formats (sanitizer_text, sanitizer_xml):
one :class:`Finding` per error it printed, and the total it counted. Stdlib only (it runs in the job's
container too). Every string here is the job's (kernel names, paths, messages): shown to a person only
through kcoral.protocol.printable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the exit code of a sanitizer job whose reports count errors (compute-sanitizer's --error-exitcode too;
#: kcoral's own exit-code table has no 86: docs/profiling.md)
ERRORS_EXIT = 86
#: the longest name, path or message kept (a report is the job's: it may hold anything)
MAX_TEXT = 512
#: the most findings read from one report (compute-sanitizer's --print-limit is 100 by default)
MAX_FINDINGS = 100_000


class ReportError(ValueError):
    """The file is not a compute-sanitizer report this reader can read; the message says why (one line)."""


def clip(text: str | None) -> str | None:
    """``text`` stripped and cut to MAX_TEXT characters (None stays None; empty becomes None)."""
    if text is None:
        return None
    text = " ".join(text.split())
    if not text:
        return None
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


@dataclass
class Finding:
    """One error (or warning) as the report printed it."""

    #: what went wrong, as the tool names it: "Invalid __global__ read of size 4 bytes", "Race hazard (WAW)", ...
    kind: str
    #: the kernel (or device function) it happened in; None when the report does not say
    kernel: str | None = None
    #: the source location, FILE:LINE (the kernel's, as its line information gives it)
    location: str | None = None
    #: threadIdx and blockIdx of the first thread that hit it
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    #: "error" or "warning"
    level: str = "error"
    #: the report's own first line of it
    message: str = ""


@dataclass
class Report:
    """A report read: its findings and the tool's own count of errors (None when it printed none)."""

    format: str
    findings: list[Finding] = field(default_factory=list)
    #: "ERROR SUMMARY: N errors" (the text report); None in XML, which holds no total
    total: int | None = None
    #: the tool named in the report, when it names one
    tool: str | None = None
    #: lines that tell of the run rather than of an error (the tool's own failures, the application's exit)
    notes: list[str] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        if len(self.findings) >= MAX_FINDINGS:
            raise ReportError(f"the report holds more than {MAX_FINDINGS} errors: read it with --print-limit lower")
        self.findings.append(finding)

    @property
    def errors(self) -> int:
        """Errors in all: the tool's total, never fewer than the error findings read (a total under them
        is not the tool's: the report is the job's file, and a job can write it)."""
        found = sum(1 for f in self.findings if f.level == "error")
        return found if self.total is None else max(self.total, found)
