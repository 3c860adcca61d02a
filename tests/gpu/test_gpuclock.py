"""The GPU's clock, temperature and throttle reasons through NVML (tasks.harness.gpuclock), on a real GPU.

Run on the GPU host: ``pytest -o addopts='' -m gpu tests/gpu/test_gpuclock.py -s``.
"""

from __future__ import annotations

import pytest

from kcoral.tasks.harness.gpuclock import open_clock

pytestmark = pytest.mark.gpu


def test_the_leased_gpu_reads_a_clock_a_temperature_and_its_reasons() -> None:
    torch = pytest.importorskip("torch")
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    clock = open_clock(uuid)
    assert clock is not None, f"NVML could not open the GPU {uuid}"
    idle = clock.read()
    x = torch.randn(8192, 8192, device="cuda")
    for _ in range(50):
        x = x @ x
        x /= x.norm()
    busy = clock.read()
    torch.cuda.synchronize()
    assert idle is not None and busy is not None
    print(f"idle: {idle}; busy: {busy}")
    assert 100 < busy.sm_mhz < 4000 and 5 < busy.temp_c < 110
    assert open_clock("GPU-00000000-0000-0000-0000-000000000000") is None
