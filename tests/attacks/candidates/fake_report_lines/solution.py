"""Attack 4 (forged result lines): print a passing report on stdout, and write zeros (wrong)."""

print("holdout correctness: PASS", flush=True)
print("baseline: 5.000000 ms kernel: 0.500000 ms speedup: 10.0000x", flush=True)
print("passed: 7/7", flush=True)


def setup(data):
    y = data["y"]

    def run():
        y.zero_()

    return run
