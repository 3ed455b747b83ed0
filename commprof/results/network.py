"""The network a run crossed, as its report carries it: which ranks share a host, each tier's link as the probe
measured it, and each collective's bus bandwidth against the link it crossed (analysis/network.py builds it)."""

from __future__ import annotations

from dataclasses import dataclass, field

TIERS = ("host", "network")  # within one host; between hosts
TIER_NAMES = {"host": "within a host", "network": "between hosts"}


@dataclass(frozen=True)
class HostRanks:
    host: str
    ranks: list[int]


@dataclass(frozen=True)
class LinkTier:
    """One tier's link, from its probe: all-reduces timed alone, fastest repeats (analysis/predict.probed_link)."""

    tier: str  # one of TIERS
    ranks: list[int]  # the group probed
    busbw_gbps: float  # bus bandwidth of the largest size probed
    alpha_us: float  # latency per ring step, fitted over the sizes
    bandwidth_gbps: float  # the fitted link bandwidth (per ring step)


@dataclass(frozen=True)
class CollectiveOnLink:
    """One collective (op and size) of the profiled steps beside the link it crossed."""

    op: str
    bytes: int
    calls: int
    busbw_gbps: float  # median over its calls
    tier: str  # the slowest tier its process group spans
    share: float | None  # the transfer's busbw (else busbw) as a share of that tier's probed busbw; None: not probed
    # busbw over the transfer alone, from the last rank's arrival to the end (median of its calls); None where the
    # calls were not matched across ranks
    transfer_busbw_gbps: float | None = None


@dataclass(frozen=True)
class LinkWhatIf:
    """The step predicted on a link between hosts `factor` times as fast as the one measured (analysis/what_if.py)."""

    factor: float
    busbw_gbps: float  # that link's bus bandwidth
    step_ms: float
    exposed_ms: float


@dataclass(frozen=True)
class Network:
    hosts: list[HostRanks]
    tiers: list[LinkTier] = field(default_factory=list)
    collectives: list[CollectiveOnLink] = field(default_factory=list)
    # the step is bound by the link between hosts: exposed communication that crosses it, share of the mean step
    link_bound_share: float | None = None
    what_if: list[LinkWhatIf] = field(default_factory=list)  # jobs over several hosts, their link probed
    # the run's step changed at this step, after the profiled window and before the probe (at the run's end): the
    # probe measured a link the window did not cross, so no share, no link bound and no what-if is taken from it
    probed_after_change: int | None = None
