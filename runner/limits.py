"""Every limit a job runs under, with its unit, its default and what happens when it is exceeded.

| limit               | unit  | default | when exceeded                                             |
|---------------------|-------|---------|-----------------------------------------------------------|
| upload_bytes        | bytes | 1 GiB   | upload refused, 413                                       |
| upload_files        | count | 20000   | upload refused, 413                                       |
| unpacked_bytes      | bytes | 2 GiB   | upload refused, 413 (sum of member sizes: zip-bomb guard) |
| timeout_s (max)     | s     | 3600    | spec refused, 400; the job's own timeout_s -> `timeout`   |
| memory_bytes        | bytes | 8 GiB   | kernel OOM kill -> verdict `memory_limit` (swap == memory)|
| pids                | count | 512     | fork/clone fail inside the job (EAGAIN)                   |
| tmpfs_bytes         | bytes | 1 GiB   | ENOSPC inside the job (/tmp, HOME lives there)            |
| shm_bytes           | bytes | 1 GiB   | ENOSPC on /dev/shm                                        |
| nofile              | count | 4096    | EMFILE inside the job                                     |
| log_bytes           | bytes | 16 MiB  | job killed -> verdict `output_limit`; log kept up to cap  |
| output_bytes        | bytes | 256 MiB | job killed -> verdict `output_limit`; files over budget   |
|                     |       |         | are not returned                                          |
| output_files        | count | 1000    | as output_bytes                                           |
| queued_per_token    | count | 16      | submit refused, 429                                       |
| env_bytes           | bytes | 64 KiB  | spec refused, 400                                         |
| argv_bytes          | bytes | 64 KiB  | spec refused, 400                                         |
| cpus                | cores | 0 (all) | the job is throttled                                      |
| gpu_memory_slack_mib| MiB   | 64      | GPU memory left in use above the lease-time baseline after |
|                     |       |         | a job, beyond this: the GPU is drained                    |
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10


@dataclass(frozen=True)
class Limits:
    upload_bytes: int = 1 * GiB
    upload_files: int = 20000
    unpacked_bytes: int = 2 * GiB
    max_timeout_s: float = 3600.0
    memory_bytes: int = 8 * GiB
    pids: int = 512
    tmpfs_bytes: int = 1 * GiB
    shm_bytes: int = 1 * GiB
    nofile: int = 4096
    log_bytes: int = 16 * MiB
    output_bytes: int = 256 * MiB
    output_files: int = 1000
    queued_per_token: int = 16
    env_bytes: int = 64 * KiB
    argv_bytes: int = 64 * KiB
    cpus: float = 0.0
    gpu_memory_slack_mib: int = 64
    #: seconds between checks of the output directory while a job runs
    output_poll_s: float = 0.25
