"""NodePorts: a pod's host ports must be free on the node (upstream plugins/nodeports/node_ports.go and
HostPortInfo.CheckConflict in kube-scheduler/framework/types.go).

A wanted (ip, protocol, port) conflicts with a used one of the same protocol and port when either ip is
0.0.0.0 or both are equal. Only ports with hostPort > 0 of containers and of restartable (sidecar) init
containers count (util.GetHostPorts).
"""

from __future__ import annotations

from ..podcounts import PodsView
from ..podtraits import BIND_ALL, HostPort, PodTraits
from . import PodContext, Rejections

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"


def conflicts(wanted: tuple[HostPort, ...], used: tuple[HostPort, ...]) -> bool:
    for ip, protocol, port in wanted:
        for used_ip, used_protocol, used_port in used:
            if (port, protocol) != (used_port, used_protocol):
                continue
            if BIND_ALL in (ip, used_ip) or ip == used_ip:
                return True
    return False


def filter_nodes(view: PodsView, pod: PodContext) -> Rejections:
    wanted = pod.traits.host_ports
    if not wanted:
        return []  # PreFilter: Skip

    def conflicting(traits: PodTraits) -> int:
        return int(conflicts(wanted, traits.host_ports))

    taken = view.counts((NAME, wanted), conflicting) > 0
    return [(taken, REASON)] if taken.any() else []
