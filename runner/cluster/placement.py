"""Several GPU hosts behind one front end, on Ray Core (``kcoral serve --ray``, ``kcoral agent --ray``).

Ray places and carries; kcoral decides. Each GPU host runs one agent: a detached named actor
(``kcoral-agent:HOST`` in the ``kcoral`` namespace) pinned to that host's Ray node, holding a
runner.cluster.hostagent.HostAgent. The front end keeps its queue, per-token fairness, auth, limits and
verdicts in its own store. It learns the hosts from the agents' inventories (:class:`ClusterPlacement`,
a runner.leases.Placement), picks each job's host and slots itself, and starts, follows and collects
the job through the host's agent (runner.cluster.remotejobs). Candidate code never runs in a Ray worker: the
agent runs it in the same hardened containers as a single server does.

Ray's hazards, designed around: a job is not a Ray task (a task dies with its owner while its
container runs on), it is a thread of the host's detached agent, which outlives the front end; the
front end lists its jobs to each agent every refresh, and an agent cancels what is not listed; a new
agent of a host removes what an earlier one left (its containers carry the data dir's label).
Ray's token authentication is asked for unless RAY_AUTH_MODE says otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcoral.protocol.errors import BadRequest
from kcoral.runner.cluster.hostagent import HostAgent, Inventory
from kcoral.runner.leases import Lease, Slot, drained_for, eligible, pick, slot_types, wanted_slots
from kcoral.runner.settings import Settings

log = logging.getLogger("kcoral.cluster")

NAMESPACE = "kcoral"
AGENT_PREFIX = "kcoral-agent:"
#: a host's CPU slots stand in for GPUs of type T where its Ray node has the custom resource
#: ``kcoral_gpu_type_T`` (a CPU-only test cluster routes by type this way)
TYPE_RESOURCE = "kcoral_gpu_type_"
#: what a host may be called: it is part of the slot names the store keeps (HOST/gpu0)
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
#: seconds an agent gets to answer an inventory before the host counts as gone
ASK_TIMEOUT_S = 10.0


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` (in the kcoral namespace); the ``ray`` module. ValueError
    when it cannot."""
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if not ray.is_initialized():
        _reachable(address)
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
        except Exception as exc:  # ConnectionError, an auth failure, a version mismatch: all said the same way
            raise ValueError(f"cannot join the Ray cluster at {address}: {str(exc).strip()[:500]}") from None
    return ray


def token_file() -> Path:
    """Where Ray reads this process's cluster token from when RAY_AUTH_TOKEN does not give it."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


def _reachable(address: str, timeout_s: float = 10.0) -> None:
    """ValueError unless something accepts a TCP connection at ``address`` (Ray itself would retry
    an address where nothing listens for minutes)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"the Ray address {address!r} is not HOST:PORT (the head's address)")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ValueError(f"cannot join the Ray cluster at {address}: nothing answers there ({exc})") from None


def agent_name(host: str) -> str:
    return AGENT_PREFIX + host


def agent_hosts(ray: Any) -> list[str]:
    """The hosts whose agent is registered now (alive or being restarted)."""
    names = ray.util.list_named_actors(all_namespaces=False)
    return sorted(n[len(AGENT_PREFIX) :] for n in names if isinstance(n, str) and n.startswith(AGENT_PREFIX))


#: seconds a new agent gets to come up (its engine answers, what an earlier agent left is removed)
AGENT_START_S = 120.0


def start_agent(ray: Any, settings: Settings, host: str, node_name: str = "") -> Any:
    """Start ``host``'s agent, pinned to its Ray node (this process's, or the one named ``node_name``),
    replacing an earlier agent of the host; the actor's handle once it answers."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = _node(ray, node_name)
    stand_in = next((k[len(TYPE_RESOURCE) :] for k in node.get("Resources", {}) if k.startswith(TYPE_RESOURCE)), "")
    name = agent_name(host)
    with contextlib.suppress(ValueError):  # an earlier agent: its running jobs end with it (their front end is told)
        ray.kill(ray.get_actor(name))
    options = {
        "name": name,
        "namespace": NAMESPACE,
        "lifetime": "detached",
        "num_cpus": 0,
        "max_concurrency": 64,
        "max_restarts": 0,
        "scheduling_strategy": NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
    }
    deadline = time.monotonic() + AGENT_START_S
    while True:
        try:
            actor = ray.remote(HostAgent).options(**options).remote(settings, host, node["NodeID"], stand_in)
            break
        except ValueError as exc:  # the earlier agent's name is not free yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"the name {name} stays taken: {exc}") from None
            time.sleep(0.2)
    ray.get(actor.inventory.remote(), timeout=AGENT_START_S)
    return actor


def _node(ray: Any, node_name: str, wait_s: float = 90.0) -> dict[str, Any]:
    """This process's Ray node, or the live one named ``node_name``. Where two live nodes have that name
    (a node restarted before Ray noticed that its earlier self died), waited for until one is left."""
    if not node_name:
        me = ray.get_runtime_context().get_node_id()
        return next(n for n in ray.nodes() if n["NodeID"] == me)
    deadline = time.monotonic() + wait_s
    while True:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        named = [n for n in nodes if n.get("NodeName") == node_name]
        if len(named) == 1:
            return named[0]
        if not named:
            names = ", ".join(sorted(str(n.get("NodeName")) for n in nodes))
            raise ValueError(f"no live Ray node is named {node_name!r} (nodes: {names})")
        if time.monotonic() > deadline:
            raise ValueError(f"{len(named)} live Ray nodes are named {node_name!r}: give each node its own name")
        time.sleep(1.0)


@dataclass
class Host:
    """A host as the front end last heard of it."""

    agent: Any
    inventory: Inventory


class ClusterPlacement:
    """runner.leases.Placement over the cluster's hosts: a job's slots all on one host, chosen by the
    front end (each host's slots as its agent reported them, less those held here or busy there)."""

    def __init__(self, ray: Any, front: str = "") -> None:
        self.ray = ray
        #: this front end's label (its data dir's): agents drop only the unlisted jobs it started
        self.front = front
        self._hosts: dict[str, Host] = {}
        #: host -> the slot names the front end holds there (its running jobs)
        self._held: dict[str, set[str]] = {}
        #: host -> the jobs the front end had there at the last refresh
        self._listed: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    # --- the hosts ------------------------------------------------------------------------------

    def refresh(self, listed: Callable[[str], list[str]]) -> None:
        """Ask every registered agent for its inventory (telling it ``listed(host)``, the jobs the front
        end has there); hosts that do not answer are left out until they do."""
        found: dict[str, Host] = {}
        jobs: dict[str, set[str]] = {}
        for host in agent_hosts(self.ray):
            jobs[host] = set(listed(host))
            try:
                agent = self.ray.get_actor(agent_name(host))
                inventory = self.ray.get(agent.inventory.remote(sorted(jobs[host]), self.front), timeout=ASK_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - a host that is gone or restarting: not offered
                log.debug("host %s does not answer: %s", host, exc)
                continue
            found[host] = Host(agent, inventory)
        with self._lock:
            gone = set(self._hosts) - set(found)
            self._hosts, self._listed = found, jobs
        for host in sorted(gone):
            log.warning("host %s left the cluster", host)

    def agent(self, host: str) -> Any:
        """The host's agent (a Ray actor handle); KeyError when the host is not in the cluster now."""
        with self._lock:
            if host in self._hosts:
                return self._hosts[host].agent
        return self.ray.get_actor(agent_name(host))  # not refreshed yet: ask Ray (ValueError if none)

    def hold(self, lease: Lease) -> None:
        """Count ``lease`` as held (a job found running again after the front end's restart)."""
        with self._lock:
            self._held.setdefault(lease.host, set()).update(s.name for s in lease.slots)

    def lease_of(self, slot: str) -> Lease:
        """The lease a running job's stored slot names (HOST/SLOT,...) stand for."""
        host = slot.split("/", 1)[0]
        names = [part.split("/", 1)[-1] for part in slot.split(",")]
        with self._lock:
            known = {s.name: s for s in self._hosts[host].inventory.slots} if host in self._hosts else {}
        return Lease(tuple(known.get(n, Slot(n)) for n in names), host)

    # --- runner.leases.Placement ----------------------------------------------------------------

    def check(self, gpus: int, gpu_type: str = "any") -> None:
        """Refuse what no host of the cluster could ever run (with no host registered, jobs wait)."""
        with self._lock:
            hosts = [h.inventory.slots for h in self._hosts.values()]
        if not hosts:
            return
        if not any(
            gpus <= max(sum(1 for s in slots if s.gpu), 1)  # a host with none runs a one-GPU job on a CPU slot
            and len(eligible(slots, gpus, gpu_type)) >= wanted_slots(slots, gpus)
            for slots in hosts
        ):
            kinds = sorted({t for slots in hosts for t in slot_types(slots)})
            raise BadRequest(
                f"the job asks for {gpus} GPU(s) of type {gpu_type}; no host of this cluster has that "
                f"(types: {', '.join(kinds)})"
            )

    def try_acquire(self, gpus: int, gpu_type: str = "any", cores: int = 1) -> Lease | None:
        with self._lock:
            for name in sorted(self._hosts, key=lambda n: (len(self._held.get(n, ())), n)):
                inv = self._hosts[name].inventory
                if inv.draining:
                    continue
                held = self._held.get(name, set())
                ours = self._listed.get(name, set())
                foreign = {slot for slot, job in inv.busy.items() if job not in ours}  # a job it has not dropped yet
                usable = {s.name for s in inv.slots} - held - foreign - set(inv.drained)
                chosen = pick(inv.slots, usable, gpus, gpu_type, cores)
                if chosen is not None:
                    self._held.setdefault(name, set()).update(s.name for s in chosen)
                    return Lease(tuple(chosen), name)
        return None

    def release(self, lease: Lease) -> None:
        with self._lock:
            self._held.get(lease.host, set()).difference_update(s.name for s in lease.slots)

    def drain(self, slot_name: str, reason: str) -> None:
        """Nothing to do here: a host's agent checks its GPUs after each job and drains its own."""

    def blocked(self, gpus: int, gpu_type: str = "any", cores: int = 1) -> str:
        """Why such a job waits with no host able to take it ("" when one could once its slots free):
        no host registered, hosts draining, or the slots it needs drained, host by host."""
        with self._lock:
            hosts = {name: h.inventory for name, h in sorted(self._hosts.items())}
        if not hosts:
            return "no host of the cluster is registered"
        why = []
        for name, inv in hosts.items():
            if len(eligible(inv.slots, gpus, gpu_type)) < wanted_slots(inv.slots, gpus, cores, gpu_type):
                continue  # never this host's job
            if inv.draining:
                why.append(f"host {name} is draining")
                continue
            drained = drained_for(inv.slots, inv.drained, gpus, gpu_type, cores)
            if not drained:
                return ""
            why.append(f"on host {name}: {drained}")
        return "; ".join(why)

    def slot_leases(self) -> list[Lease]:
        return []  # standby containers are each host's own business

    def describe(self) -> dict[str, object]:
        with self._lock:
            hosts = {
                name: {
                    "slots": [s.name for s in h.inventory.slots],
                    "types": {s.name: s.type for s in h.inventory.slots if s.type},
                    "gpus": {s.name: s.gpu.uuid for s in h.inventory.slots if s.gpu is not None},
                    "busy": sorted(set(h.inventory.busy) | self._held.get(name, set())),
                    "jobs": h.inventory.jobs,
                    "drained": h.inventory.drained,
                    "images": h.inventory.images,
                    "draining": h.inventory.draining,
                }
                for name, h in sorted(self._hosts.items())
            }
        return {"cluster": True, "hosts": hosts}


def slot_rows(described: dict[str, Any]) -> list[dict[str, str]]:
    """A cluster's slots, one row each (host, slot, type, GPU UUID, state), from
    :meth:`ClusterPlacement.describe`: what ``kcoral gpus`` shows as a table."""
    rows = []
    hosts = described.get("hosts")
    for host, info in sorted(hosts.items()) if isinstance(hosts, dict) else ():
        for slot in info["slots"]:
            drained = info["drained"].get(slot)
            state = f"drained: {drained}" if drained else "busy" if slot in info["busy"] else "free"
            if info["draining"] and not drained:
                state += " (host draining)"
            rows.append(
                {"host": host, "slot": slot, "type": info["types"].get(slot, "-"), "gpu": info["gpus"].get(slot, "-"),
                 "state": state}
            )  # fmt: skip
    return rows
