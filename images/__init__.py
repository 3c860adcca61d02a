"""Local job images for kcoral: built on the host, no registry needed."""

from kcoral.images.errors import ImageBuildError
from kcoral.images.refs import IMAGE_LABEL, IMAGE_REFS

__all__ = ["IMAGE_LABEL", "IMAGE_REFS", "ImageBuildError"]
