"""Local job images for kcoral: built on the host, no registry needed."""

from images.errors import ImageBuildError
from images.refs import IMAGE_LABEL, IMAGE_REFS

__all__ = ["IMAGE_LABEL", "IMAGE_REFS", "ImageBuildError"]
