"""Issue 29 on the GPU: the KDA task's own template (the baseline's chunk_kda call) plus the interrupt
storm of tests/attacks/candidates/irq_storm/storm.py, armed in setup. scripts/gpu-host-eval.sh puts
both beside this file (template.py, storm.py). On the H200 the same storm aimed at the baseline's calls
passed 2.2105x [2.1508, 2.2526] against the judge before issue 29; it must gain nothing."""

import storm
import template


def setup(data, B, T, H):
    storm.arm()
    return template.setup(data, B, T, H)
