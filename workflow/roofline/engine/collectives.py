"""The time of a collective on a device's links: inside one scale-up domain, or across several joined by the
scale-out network.

Inside a domain every byte a collective sends per device (the formula's `network` bytes, the flat ring's count;
an all-reduce's tensor once where the switch reduces in flight, below) crosses the scale-up link: latency + bytes /
bandwidth. Across m domains of g devices (span n = g m) a device
has both links, and collective libraries use both: NCCL runs rings through every device of a domain and crosses
between domains on several NICs at once, or runs the collective hierarchically; DeepEP's internode all-to-all
sends a token once to each remote domain and fans it out there. The bound is what no such algorithm beats: the
bytes that must leave each domain, spread over its g NICs (the cut), on the scale-out link, and all the bytes a
device moves on both links together:

* all-reduce of S bytes: cut 2 (m - 1) / m S / g per device; in all 2 (n - 1) / n S (the flat ring's; S with
  in-network reduction);
* all-gather of an S_out-byte output: cut (m - 1) / m S_out / g; in all (n - 1) / n S_out;
* all-to-all of S bytes per device (its copies for every rank): at best a token crosses once per remote domain,
  so cut (n - g) / n S / g, with (g - 1) / n S inside its own domain;
* p2p (a pipeline hand-over): flat, on the span's link.

time = max(scale-out latency + cut / scale-out bandwidth, scale-up latency + all / (both bandwidths)), never above
the flat ring through the NIC.

In-network reduction (`Accelerator.in_network_reduction`: NVLink SHARP on NVSwitch 3 and later, NCCL's NVLS and
TensorRT-LLM's multimem all-reduce): the switch adds the devices' contributions in flight, so an all-reduce of S
bytes sends S and receives S per device (every element leaves once and its sum comes back once) where the ring needs
2 (n - 1) / n S (1.75 S at n = 8). That is the bound of an all-reduce on such a link, inside the domain and as the
bytes "in all" across domains (the cut is unchanged: the scale-out network is not assumed to reduce). Measured: an
8-GPU H100 all-reduce of 1 GiB in 4.01 ms (aiconfigurator-core's TensorRT-LLM table), 0.96x the ring's 4.18 ms.
"""
from __future__ import annotations

import numpy as np

#: collective kind by a communication operator's name
KINDS = (("all_reduce", "all_reduce"), ("all_gather", "all_gather"), ("all_to_all", "all_to_all"),
         ("dispatch", "all_to_all"), ("send", "p2p"))


def collective_kind(name: str) -> str:
    """The collective a communication operator runs, by its name (all-reduce when none matches)."""
    return next((kind for part, kind in KINDS if part in name), "all_reduce")


def reduced_bytes(kind: str, network, n: float, reduction):
    """Bytes per device a collective whose flat-ring count is `network` moves over n devices on a link that reduces
    in flight where `reduction` (bool or array): an all-reduce's S instead of the ring's 2 (n - 1) / n S."""
    if kind != "all_reduce" or n < 2:
        return network
    return np.where(reduction, network * n / (2 * (n - 1)), network)


def split_bytes(kind: str, network, n: float, g: float, reduction=False):
    """(bytes per device in all, the least of them that must leave its domain) of a collective whose flat-ring
    bytes per device are `network`, over n devices in domains of g (module docstring)."""
    m = n / g
    if kind == "all_reduce":  # network = 2 (n - 1) / n S
        return reduced_bytes(kind, network, n, reduction), 2 * (m - 1) / m * (network * n / (2 * (n - 1))) / g
    if kind == "all_gather":  # network = (n - 1) / n S_out
        return network, (m - 1) / m * (network * n / (n - 1)) / g
    if kind == "all_to_all":  # network = (n - 1) / n S
        data = network * n / (n - 1)
        cut = (n - g) / n * data / g
        return (g - 1) / n * data + cut, cut
    return network, network  # p2p: the hand-over, whole


def link_arrays(gpus, span: int) -> np.ndarray:
    """[devices x 6] link facts of `gpus` for a span: (bandwidth, latency) of the link the span reaches (gpu.link,
    which raises the one-line error of a device without it), the scale-up link's (bandwidth, latency) and domain,
    and 1 where the scale-up link reduces in flight (0 elsewhere)."""
    return np.array([(*gpu.link(span), gpu.scaleup_bandwidth_bytes_per_s, gpu.scaleup_latency_s, gpu.scaleup_domain,
                      _reduces(gpu)) for gpu in gpus], dtype=float)


def _reduces(gpu) -> bool:
    """Whether `gpu`'s scale-up link reduces all-reduce data in flight (module docstring)."""
    return bool(getattr(gpu, "in_network_reduction", False)) and gpu.scaleup_bandwidth_bytes_per_s > 0


def _least(kind: str, network, span: int, bandwidth, latency, up_bandwidth, up_latency, g, reduction=False):
    """The bound across domains of g (module docstring): the cut on the scale-out link or all bytes on both links,
    whichever takes longer, never above the flat ring through the NIC (scalars or arrays)."""
    total, cut = split_bytes(kind, network, float(span), g, reduction)
    least = np.maximum(latency + cut / bandwidth, np.minimum(up_latency, latency) + total / (up_bandwidth + bandwidth))
    return np.minimum(latency + network / bandwidth, least)


def crosses_domains(gpu, span: int) -> bool:
    """Whether `span` devices of `gpu` reach past one scale-up domain (a device with a scale-up link)."""
    return span > gpu.scaleup_domain > 1 and gpu.scaleup_bandwidth_bytes_per_s > 0


def _across(gpu, kind: str, span: int) -> bool:
    """Whether a collective of `kind` over `span` devices of `gpu` spans scale-up domains (p2p never counts)."""
    return kind != "p2p" and crosses_domains(gpu, span)


def link_seconds(kind: str, network, span: int, links) -> np.ndarray:
    """Time [s] of one collective of `kind` moving `network` flat-ring bytes per device over `span` devices, on
    links given as link_arrays' six columns (each an array that broadcasts against `network`)."""
    bandwidth, latency, up_bandwidth, up_latency, domain, reduction = links
    network = np.asarray(network, dtype=float)
    flat = latency + reduced_bytes(kind, network, span, (reduction > 0) & (span <= domain)) / bandwidth
    across = (span > domain) & (domain > 1) & (up_bandwidth > 0)
    if kind == "p2p" or not np.any(across):
        return flat
    least = _least(kind, network, span, bandwidth, latency, np.where(across, up_bandwidth, 0.0), up_latency,
                   np.where(across, domain, 1.0), reduction > 0)
    return np.where(across, least, flat)


def moved_bytes(gpu, kind: str, network, span: int):
    """Bytes per device on the link of a collective whose flat-ring count is `network`: the count itself, but an
    all-reduce's tensor once (S, not 2 (n - 1) / n S) inside a domain whose link reduces in flight; across domains
    the flat ring's count (the operator rows' bytes_network)."""
    return reduced_bytes(kind, network, span, _reduces(gpu) and span <= gpu.scaleup_domain)


def collective_seconds(gpu, kind: str, network, span: int):
    """Time [s] of one collective of `kind` moving `network` flat-ring bytes per device over `span` devices of
    `gpu` (arrays broadcast; a float for a float)."""
    bandwidth, latency = gpu.link(span)
    if not _across(gpu, kind, span):
        seconds = latency + moved_bytes(gpu, kind, network, span) / bandwidth
        return seconds if np.ndim(seconds) else float(seconds)
    least = _least(kind, network, span, bandwidth, latency, gpu.scaleup_bandwidth_bytes_per_s, gpu.scaleup_latency_s,
                   float(gpu.scaleup_domain), _reduces(gpu))
    return least if np.ndim(least) else float(least)


def effective_bandwidth(gpu, kind: str, network, span: int, seconds):
    """The bandwidth [byte/s] a collective's bytes moved at, given its time: the span's link inside a domain (for
    moved_bytes); across domains network / (time - the scale-out latency), both links and the cut together (so
    that time = latency + bytes / bandwidth holds in the operator rows)."""
    bandwidth, latency = gpu.link(span)
    if not _across(gpu, kind, span):
        return bandwidth
    if not np.ndim(network) and not np.ndim(seconds):
        return network / (seconds - latency) if seconds > latency and network > 0 else bandwidth
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(seconds) > latency, np.asarray(network) / (np.asarray(seconds) - latency),
                        bandwidth)


def link_time(gpu, kind: str, network, span: int):
    """(bandwidth [byte/s] its bytes moved at, time [s]) of one collective (collective_seconds, effective_bandwidth)."""
    seconds = collective_seconds(gpu, kind, network, span)
    return effective_bandwidth(gpu, kind, network, span, seconds), seconds
