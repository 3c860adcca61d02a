"""Image names and labels shared by the builders."""

IMAGE_REFS: dict[str, str] = {
    "cpu": "kcoral-job:cpu",
    "toolchain": "kcoral-toolchain:latest",
    "base": "kcoral-base:bookworm",
    "ncu": "kcoral-ncu:latest",
    "iket": "kcoral-iket:latest",
}

# Every kcoral image carries this label; its value is the image kind (cpu, gpu, toolchain, base, ncu, iket).
IMAGE_LABEL = "kcoral.image"


def split_ref(ref: str) -> tuple[str, str]:
    """Split "repo:tag" into ("repo", "tag"); a missing tag means "latest"."""
    repo, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return repo, tag
