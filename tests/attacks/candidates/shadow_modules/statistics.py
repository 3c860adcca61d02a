"""A shadow of the real statistics module: must never be imported by the harness."""

print("SHADOW-LOADED statistics", flush=True)
raise ImportError("shadow statistics")
