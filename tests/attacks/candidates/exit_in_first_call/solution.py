"""Attack (a kill at the wrong moment): os._exit(0) in the first call, which is now the untimed call on
decoy inputs before any case. The worker is gone before the holdout: it must fail as the candidate's
error, never as the server's."""

import os


def setup(data):
    def run():
        os._exit(0)

    return run
