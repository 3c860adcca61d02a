"""Image names and labels shared by the builders."""

IMAGE_REFS: dict[str, str] = {
    "cpu": "kcoral-job:cpu",
    "toolchain": "kcoral-toolchain:latest",
    "base": "kcoral-base:bookworm",
    "ncu": "kcoral-ncu:latest",
    "iket": "kcoral-iket:latest",
}

#: what ``kcoral images build`` knows, in build order, and what it builds when told nothing
BUILDABLE = ("base", "cpu", "toolchain", "ncu", "iket")
DEFAULT_BUILD = ("cpu", "toolchain")
#: the job image the profiler layers (ncu, iket) go on unless told otherwise
PROFILER_BASE = "kcoral-job:gpu"

# Every kcoral image carries this label; its value is the image kind (cpu, gpu, toolchain, base, ncu, iket).
IMAGE_LABEL = "kcoral.image"


def split_ref(ref: str) -> tuple[str, str]:
    """Split "repo:tag" into ("repo", "tag"); a missing tag means "latest"."""
    repo, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return repo, tag
