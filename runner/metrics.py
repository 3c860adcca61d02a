"""``GET /metrics`` in Prometheus's text format (prometheus-client): what the store holds (jobs by kind,
state and verdict; the queue per token; queue-wait and run-time histograms; bytes uploaded, logged and
returned), each slot's lease and drain, and each GPU's telemetry from NVML.

Everything is read at scrape time (the store's aggregates, the placement, NVML): the figures survive
a restart and nothing is kept twice. With a tokens file the route wants a token, unless the server
was started with ``--metrics-public``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

if TYPE_CHECKING:
    from kcoral.runner.services import Services

#: bounds (seconds) of the queue-wait and run-time histograms
BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: NVML's readings (runner.gpus.Nvml.telemetry) -> metric name, help
GPU_READINGS = {
    "sm_clock_mhz": ("kcoral_gpu_sm_clock_mhz", "SM clock (MHz)"),
    "mem_clock_mhz": ("kcoral_gpu_memory_clock_mhz", "memory clock (MHz)"),
    "temperature_c": ("kcoral_gpu_temperature_celsius", "GPU temperature (C)"),
    "power_w": ("kcoral_gpu_power_watts", "power draw (W)"),
}


class _Collector:
    """prometheus-client's custom collector protocol: :meth:`collect` yields the metric families."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def collect(self) -> Iterator[Metric]:
        yield from self._jobs()
        yield from self._slots()
        yield from self._gpus()

    def _jobs(self) -> Iterator[Metric]:
        stats = self.svc.store.stats(BUCKETS)
        jobs = GaugeMetricFamily("kcoral_jobs", "jobs in the store", labels=["kind", "state", "verdict"])
        for (kind, state, verdict), count in sorted(stats.jobs.items()):
            jobs.add_metric([kind, state, verdict], count)
        yield jobs
        queue = GaugeMetricFamily("kcoral_queue_depth", "jobs waiting for a slot, per token", labels=["owner"])
        for owner, count in sorted(stats.queued.items()):
            queue.add_metric([owner], count)
        yield queue
        for name, text, (count, total, under) in (
            ("kcoral_queue_wait_seconds", "finished jobs: queued until started", stats.wait),
            ("kcoral_run_seconds", "finished jobs: started until finished", stats.run),
        ):
            buckets = [(_bound(b), float(n)) for b, n in zip(BUCKETS, under, strict=True)] + [("+Inf", float(count))]
            yield HistogramMetricFamily(name, text, buckets=buckets, sum_value=total)
        for name, text, value in (
            ("kcoral_upload_bytes", "bytes of the jobs' uploaded inputs", stats.input_bytes),
            ("kcoral_log_bytes", "bytes of the jobs' logs", stats.log_bytes),
            ("kcoral_output_bytes", "bytes of the jobs' kept outputs", stats.output_bytes),
        ):
            yield CounterMetricFamily(name, text, value=value)

    def _slots(self) -> Iterator[Metric]:
        described = self.svc.placement.describe()
        busy = GaugeMetricFamily("kcoral_slot_busy", "1 while a job holds the slot", labels=["slot"])
        drained = GaugeMetricFamily("kcoral_slot_drained", "1 once the slot takes no more jobs", labels=["slot"])
        for slot, is_busy, is_drained in _slot_states(described):
            busy.add_metric([slot], float(is_busy))
            drained.add_metric([slot], float(is_drained))
        yield busy
        yield drained

    def _gpus(self) -> Iterator[Metric]:
        families = {
            key: GaugeMetricFamily(name, text, labels=["gpu", "uuid"]) for key, (name, text) in GPU_READINGS.items()
        }
        memory = GaugeMetricFamily("kcoral_gpu_memory_used_mib", "GPU memory in use (MiB)", labels=["gpu", "uuid"])
        for gpu in self.svc.gpus:
            labels = [str(gpu.index), gpu.uuid]
            for key, value in (self.svc.nvml.telemetry(gpu.index) or {}).items():
                if key in families:
                    families[key].add_metric(labels, value)
            usage = self.svc.nvml.usage(gpu.index)
            if usage is not None:
                memory.add_metric(labels, usage.memory_used_mib)
        yield from families.values()
        yield memory


def _slot_states(described: dict[str, object]) -> list[tuple[str, bool, bool]]:
    """(slot, busy, drained) for a single server's slots or, on a cluster front end, every host's
    (named HOST/SLOT)."""
    hosts = described.get("hosts")
    if isinstance(hosts, dict):
        return [
            (f"{host}/{slot}", slot in info["busy"], slot in info["drained"] or bool(info["draining"]))
            for host, info in sorted(hosts.items())
            for slot in info["slots"]
        ]
    free, drained = set(described.get("free", [])), dict(described.get("drained", {}))  # type: ignore[call-overload]
    return [(slot, slot not in free and slot not in drained, slot in drained) for slot in described.get("slots", [])]  # type: ignore[attr-defined]


def _bound(b: float) -> str:
    return repr(float(b))


def render(svc: Services) -> bytes:
    """The metrics page."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(svc))
    return generate_latest(registry)
