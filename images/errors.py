"""Exception raised when a kcoral image cannot be built."""


class ImageBuildError(Exception):
    """An image build failed; the message says what to do about it."""
