"""A shadow of the real numpy module: must never be imported by the harness."""

print("SHADOW-LOADED numpy", flush=True)
raise ImportError("shadow numpy")
