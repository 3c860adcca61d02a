"""A shadow of the real torch module: must never be imported by the harness."""

print("SHADOW-LOADED torch", flush=True)
raise ImportError("shadow torch")
