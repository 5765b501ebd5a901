"""The time of a collective on a device's links: inside one scale-up domain, or across several joined by the
scale-out network.

Inside a domain every byte a collective sends per device (the formula's `network` bytes) crosses the scale-up link:
latency + bytes / bandwidth. Across m domains of g devices (span n = g m), a flat ring would push all of them
through the scale-out NIC, which no collective library does: NCCL (and its peers) run the collective
hierarchically, the g devices of a domain sharing the traffic between domains over their g NICs. Per device, for
S bytes of data per device (S_out for an all-gather's output):

* all-reduce: 2 (g - 1) / g S over the scale-up link, 2 (m - 1) / m S / g over the scale-out one (reduce-scatter
  inside the domain, all-reduce of one g-th between the domains, all-gather inside);
* all-gather: (g - 1) / g S_out up, (m - 1) / m S_out / g out;
* all-to-all: each byte has its own destination, so (g - 1) / n S stays inside and (n - g) / n S leaves;
* p2p (a pipeline hand-over): its bytes on the slower link it crosses.

The two links run at once, so the bound is the slower of the two (each with its latency), never above the flat
ring's time. NVLink SHARP or in-network reduction can do an all-reduce in fewer bytes still; the bound does not
assume them.
"""
from __future__ import annotations

import numpy as np

#: collective kind by a communication operator's name
KINDS = (("all_reduce", "all_reduce"), ("all_gather", "all_gather"), ("all_to_all", "all_to_all"),
         ("dispatch", "all_to_all"), ("send", "p2p"))


def collective_kind(name: str) -> str:
    """The collective a communication operator runs, by its name (all-reduce when none matches)."""
    return next((kind for part, kind in KINDS if part in name), "all_reduce")


def split_bytes(kind: str, network, n: float, g: float):
    """(bytes per device over the scale-up link, over the scale-out link) of a collective whose flat-ring bytes per
    device are `network`, over n devices in domains of g."""
    m = n / g
    if kind == "all_reduce":  # network = 2 (n - 1) / n S
        data = network * n / (2 * (n - 1))
        return 2 * (g - 1) / g * data, 2 * (m - 1) / m * data / g
    if kind == "all_gather":  # network = (n - 1) / n S_out
        data = network * n / (n - 1)
        return (g - 1) / g * data, (m - 1) / m * data / g
    if kind == "all_to_all":  # network = (n - 1) / n S
        data = network * n / (n - 1)
        return (g - 1) / n * data, (n - g) / n * data
    return 0.0 * network, network  # p2p: the hand-over crosses the slower link


def link_arrays(gpus, span: int) -> np.ndarray:
    """[devices x 5] link facts of `gpus` for a span: (bandwidth, latency) of the link the span reaches (gpu.link,
    which raises the one-line error of a device without it), the scale-up link's (bandwidth, latency) and domain."""
    return np.array([(*gpu.link(span), gpu.scaleup_bandwidth_bytes_per_s, gpu.scaleup_latency_s, gpu.scaleup_domain)
                     for gpu in gpus], dtype=float)


def link_seconds(kind: str, network, span: int, links) -> np.ndarray:
    """Time [s] of one collective of `kind` moving `network` flat-ring bytes per device over `span` devices, on
    links given as link_arrays' five columns (each an array that broadcasts against `network`)."""
    bandwidth, latency, up_bandwidth, up_latency, domain = links
    network = np.asarray(network, dtype=float)
    flat = latency + network / bandwidth
    across = (span > domain) & (domain > 1) & (up_bandwidth > 0)
    if kind == "p2p" or not np.any(across):
        return flat
    g = np.where(across, domain, 1.0)
    inside, outside = split_bytes(kind, network, float(span), g)
    hierarchical = np.maximum(up_latency + inside / np.where(across, up_bandwidth, 1.0), latency + outside / bandwidth)
    return np.where(across, np.minimum(flat, hierarchical), flat)


def collective_seconds(gpu, kind: str, network, span: int) -> np.ndarray:
    """Time [s] of one collective of `kind` moving `network` flat-ring bytes per device over `span` devices of
    `gpu` (arrays broadcast)."""
    return link_seconds(kind, network, span, tuple(link_arrays([gpu], span)[0]))
