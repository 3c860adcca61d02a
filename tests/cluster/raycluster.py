"""A real Ray cluster on this machine for the cluster tests and bench/placement.py: a head and worker
nodes (each `ray start --block` in a process group of its own, so that killing the group kills that
node as a machine's loss would), one `kcoral agent` per worker node, and a front end
(`kcoral serve --ray`). Token authentication on, no dashboard, as docs/cluster.md says."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker

from kcoral.runner.sandbox import LABEL_INSTANCE, LABEL_JOB
from kcoral.runner.settings import Settings
from tests.serverproc import ROOT, ServerProcess, free_port

#: a Ray node's object store here (the jobs' files travel through it): small, on a 2-core test machine
OBJECT_STORE_BYTES = 150 * 1024 * 1024


class RayNode:
    """``ray start --block`` for one node; its whole process group can be killed."""

    def __init__(self, cluster: RayCluster, name: str, head: bool, resources: dict[str, float]) -> None:
        self.cluster, self.name, self.head, self.resources = cluster, name, head, resources
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = cluster.root / f"node-{name}-{len(list(cluster.root.glob(f'node-{name}-*.log')))}.log"

    def start(self) -> RayNode:
        where = ["--head", "--port", str(self.cluster.port), "--temp-dir", str(self.cluster.temp)]
        where += ["--include-dashboard=false"]
        if not self.head:
            where = ["--address", self.cluster.address]
        log = open(self.log, "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            ["ray", "start", "--block", *where, "--num-cpus", "1", "--node-name", self.name, "--disable-usage-stats",
             "--object-store-memory", str(OBJECT_STORE_BYTES), "--resources", json.dumps(self.resources)],
            env=self.cluster.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        return self

    def kill(self) -> None:
        """SIGKILL to the node's every process (its raylet, its workers: the agent with them)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


class Agent:
    """``kcoral agent`` for one worker node (host ``host``)."""

    def __init__(self, cluster: RayCluster, host: str, node: str, image: str, cpu_slots: int = 1) -> None:
        self.cluster, self.host, self.node, self.image, self.cpu_slots = cluster, host, node, image, cpu_slots
        self.data_dir = cluster.root / f"agent-{host}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def instance(self) -> str:
        return Settings(data_dir=self.data_dir.resolve()).instance

    def start(self, timeout: float = 120) -> Agent:
        log_path = (
            self.cluster.root / f"agent-{self.host}-{len(list(self.cluster.root.glob(f'agent-{self.host}-*')))}.log"
        )
        log = open(log_path, "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kcoral", "agent", "--ray", self.cluster.address, "--host-name", self.host,
             "--node-name", self.node, "--data-dir", str(self.data_dir), "--image", self.image, "--gpus", "none",
             "--cpu-slots", str(self.cpu_slots), "--log-level", "warning"],
            cwd=ROOT, env=self.cluster.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while "serves the cluster" not in log_path.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"agent {self.host} did not start:\n{log_path.read_text(errors='replace')}")
            time.sleep(0.2)
        return self

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM: the host drains and its agent goes."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def containers(self, jobs_only: bool = True) -> list[str]:
        """The ids of the containers this host's agents made that exist now: those that run (or ran)
        a job, or (``jobs_only=False``) every one, the standby kept ready for the next job too."""
        engine = docker.from_env()
        try:
            found = engine.containers.list(all=True, filters={"label": f"{LABEL_INSTANCE}={self.instance}"})
            return [c.id for c in found if not jobs_only or LABEL_JOB in c.labels or c.name.startswith("kcoral-")]
        finally:
            engine.close()


class RayCluster:
    """A head (no jobs) and worker nodes, each with its own agent, and a front end."""

    def __init__(self, image: str) -> None:
        self.image = image
        # short: Ray's socket paths live under the temp dir, and a socket path has 107 bytes at most
        self.root = Path(tempfile.mkdtemp(prefix="kcr-"))
        self.temp = self.root / "r"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "RAY_USAGE_STATS_ENABLED": "0",
            # a killed node is taken for dead after health_check_failure_threshold (5) failed checks in a
            # row, here 1 s apart instead of Ray's 3 s: ~5 s, not ~15 s (test_cluster's lost node waited
            # for it); each check keeps Ray's own timeout, so a busy node that answers late is not dead
            "RAY_health_check_period_ms": "1000",
        }
        self.nodes: dict[str, RayNode] = {}
        self.agents: dict[str, Agent] = {}
        self.front: ServerProcess | None = None

    def start_node(self, name: str, head: bool = False, resources: dict[str, float] | None = None) -> RayNode:
        node = RayNode(self, name, head, resources or {}).start()
        self.nodes[name] = node
        self._wait_for_node(name)
        return node

    def _wait_for_node(self, name: str, timeout: float = 60) -> None:
        log = self.nodes[name].log
        deadline = time.monotonic() + timeout
        while "Ray runtime started" not in log.read_text(errors="replace"):
            node = self.nodes[name].proc
            if (node is not None and node.poll() is not None) or time.monotonic() > deadline:
                raise AssertionError(f"Ray node {name} did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.2)

    def start_agent(self, host: str, node: str, cpu_slots: int = 1) -> Agent:
        agent = Agent(self, host, node, self.image, cpu_slots).start()
        self.agents[host] = agent
        return agent

    def kill_agent_actor(self, host: str) -> None:
        """Kill ``host``'s agent actor (as a crash of its process would end it), from a driver of its own."""
        code = (
            f"import ray; ray.init(address={self.address!r}, namespace='kcoral', log_to_driver=False); "
            f"ray.kill(ray.get_actor('kcoral-agent:{host}'))"
        )
        subprocess.run([sys.executable, "-c", code], env=self.env, check=True, capture_output=True, timeout=60)

    def start_front(self, port: int | None = None) -> ServerProcess:
        data = self.root / "front"
        self.front = ServerProcess(data, self.image, 0, port, "--ray", self.address, env=self.env).start(timeout=60)
        return self.front

    def stop(self) -> None:
        if self.front is not None:
            self.front.kill()
        for agent in self.agents.values():
            agent.stop(timeout=20)
        for node in reversed(list(self.nodes.values())):
            node.kill()
        engine = docker.from_env()
        try:
            for agent in self.agents.values():
                label = f"{LABEL_INSTANCE}={agent.instance}"
                for c in engine.containers.list(all=True, sparse=True, filters={"label": label}):
                    c.remove(force=True)
        finally:
            engine.close()
        subprocess.run(["pkill", "-9", "-f", str(self.temp)], check=False)
        shutil.rmtree(self.root, ignore_errors=True)
