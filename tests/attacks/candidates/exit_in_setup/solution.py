"""Attack 4 (exit early): os._exit(0) from setup(), before any output is written."""

import os


def setup(data):
    os._exit(0)
