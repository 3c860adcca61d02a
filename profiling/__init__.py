"""Profiling jobs (``kcoral ncu``, ``kcoral iket``): argv building and report/trace summaries."""
