"""``--measured``: a throughput the user measured on their own stack, in place of a ``--stack`` class.

Why: out of sample, who runs a job explains most of what the MFU model misses. Typical teams differ from each other
by a factor of five (README, Where it still misses), and nothing a publication says separates a fast typical team
from a slow one. A user who has run a few hundred steps of the model on their own stack has that information:
``--measured 3100@8xA100-80GB`` says "this model trained at 3,100 tokens/s per GPU on 8 A100-80GB".

The measurement sets the team's factor; the MFU model carries it to other GPUs and GPU counts:

    steady   = tokens/s/GPU x FLOPs per token / peak of the measured GPU       (the MFU the user saw)
    factor   = steady x GOODPUT / mfu(measured GPU and count, stack "tuned")    (the team against a tuned one)
    expected = factor x mfu(target GPU and count, stack "tuned")

GOODPUT is the share of a whole run's wall time spent at that steady rate; restarts after failures, evaluation,
checkpoint writes and data stalls take the rest. It is stated, not calibrated (no published run gives both figures
for the same job with the restarts counted): 0.9, after the Llama 3 report's "higher than 90 % effective training
time" on 16K H100 (Dubey et al. 2024, section 3.3.4; Llama 3.1 405B's published 30.84M GPU-hours are 37 % MFU with
attention counted, against the 38-43 % steady MFU of the report's Table 4: 0.87-0.98). The range, 0.75-1.0, is a
guess around it: a run that never stops, and a small team that restarts failed jobs by hand.

The measured layout: the GPUs on servers of NODE_GPUS (one server when fewer) and, when they span servers, RDMA
between them unless the measurement says otherwise (``3100@16xA100-80GB:ethernet``). The model's reference MFU is
computed on that layout, so a target on another network is charged the model's difference (before, the reference took
the target's network, and an Ethernet option came out as fast as an InfiniBand one).

The band: on the measured GPU, the goodput range, its slow end lowered by DOUBLING_STEP for each doubling of GPUs, of
servers and for a change of network between the measurement and the target (``doublings``), never below the transfer
band's low end; its fast end stays the measured steady rate times the model's transfer: the model's own terms are the
best the measurement can be carried by, and nothing in a change of count makes a job faster per GPU than its own
steady rate times what the model says the change is worth. On another GPU the transfer band (``Fit.measured_band``),
read off the calibration the way a user would use it: each run predicted from another published run of the same
organisation and stack class (``optimizer.calibration.transfer_log_ratios``); out of sample its figures are in
``python bench/calibration.py``. Those pairs differ in model, size and often GPU, so that band is wider than a
same-model, same-GPU transfer needs (until this change any change of count took it, and its fast end, x1.94, put the
same GPU 26 % faster per GPU than the user's own steady rate).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from optimizer.mfu import FABRICS
from warehouse.errors import UsageError
from warehouse.gpus import GpuSpec

GOODPUT = 0.9  # stated: whole-run wall time at the steady rate (Llama 3 report: > 90 % effective training time)
GOODPUT_RANGE = (0.75, 1.0)  # stated: a team that restarts by hand, and a run that never stops
NODE_GPUS = 8  # the measured GPUs sat on servers of this many (or on one server, when fewer)

MEASURED_FABRIC = "rdma"  # stated: the network between the measured servers unless the measurement names one
# stated, not calibrated: the slow end's factor per doubling of GPUs or of servers (or a change of network) between
# the measurement and the target, on the measured GPU. No calibration pair keeps the model and GPU and changes only
# the count, so nothing measures it. The same-team pairs on one GPU (other models too) put their slow 5 % at 0.75 of
# the prediction at the same count and at 0.46-0.49 one to four doublings apart (0.17 at three: Pleias's two runs):
# the slow end does widen with the distance; the model's own terms already charge 1-2 % per doubling on RDMA
DOUBLING_STEP = 0.9

_MEASURED = re.compile(
    r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?)\s*([kK]?)\s*@\s*([0-9]+)\s*[x×*]\s*(\S.*?)(?:\s*:\s*([A-Za-z]+))?\s*$"
)
EXAMPLE = "3100@8xA100-80GB (tokens/s per GPU @ GPUs x GPU; across servers add :ethernet if not over RDMA)"


@dataclass(frozen=True, slots=True)
class Measurement:
    """A steady training throughput of the job's own model, on ``gpus`` of ``gpu`` (one node's layout or more)."""

    tokens_per_s_per_gpu: float
    gpu: GpuSpec
    gpus: int
    fabric: str = MEASURED_FABRIC  # the network between the measured servers (read only when they are several)
    fabric_given: bool = False  # False: MEASURED_FABRIC, assumed

    @property
    def gpus_per_node(self) -> int:
        return min(self.gpus, NODE_GPUS)

    @property
    def nodes(self) -> int:
        return math.ceil(self.gpus / self.gpus_per_node)

    def __str__(self) -> str:
        text = f"{self.tokens_per_s_per_gpu:,.0f} tokens/s per GPU on {self.gpus} x {self.gpu.name}"
        if self.nodes > 1:
            text += f", {self.nodes} servers over {self.fabric}" + ("" if self.fabric_given else " (assumed)")
        return text


def parse_measurement(text: str) -> Measurement:
    """``3100@8xA100-80GB``, ``3.1k @ 16 x H100``: tokens/s per GPU, then the GPU count and the GPU it ran on;
    ``3100@16xA100-80GB:ethernet`` names the network between the measured servers (else MEASURED_FABRIC)."""
    from warehouse.gpus import catalog

    match = _MEASURED.match(text)
    if match is None:
        raise UsageError(f"cannot read --measured {text!r}: write it as {EXAMPLE}")
    rate = float(match.group(1).replace(",", "").replace("_", "")) * (1000 if match.group(2) else 1)
    gpus = int(match.group(3))
    if not math.isfinite(rate) or rate <= 0:
        raise UsageError(f"--measured: the throughput must be positive, got {text!r}")
    if gpus <= 0:
        raise UsageError(f"--measured: the GPU count must be positive, got {text!r}")
    fabric = (match.group(5) or MEASURED_FABRIC).lower()
    if fabric not in FABRICS:
        raise UsageError(
            f"--measured {text!r}: the network after ':' must be one of {', '.join(FABRICS)}, got {match.group(5)!r}"
        )
    try:
        gpu = catalog().resolve(match.group(4))
    except UsageError as exc:
        raise UsageError(f"--measured: {exc}") from None
    return Measurement(rate, gpu, gpus, fabric=fabric, fabric_given=match.group(5) is not None)


def steady_mfu(measurement: Measurement, flops_per_token: float, peak_flops: float) -> float:
    """The MFU the measurement shows: achieved FLOP/s per GPU over the measured GPU's peak in the job's precision."""
    mfu = measurement.tokens_per_s_per_gpu * flops_per_token / peak_flops
    if mfu > 1:
        raise UsageError(
            f"--measured {measurement} is {mfu:.0%} of the GPU's peak for this model, which no GPU can do: "
            "give tokens per second per GPU of this model (not of the whole job, not of a smaller model)"
        )
    return mfu


def doublings(measurement: Measurement, gpus: int, gpus_per_node: int, fabric: str) -> float:
    """How far a target layout of the measured GPU is from the measured one: doublings of GPUs, plus doublings of
    servers (crossing from one server to several is new traffic the measurement never saw), plus one when both span
    servers over different networks."""
    nodes = math.ceil(gpus / max(1, min(gpus, gpus_per_node)))
    distance = abs(math.log2(gpus / measurement.gpus)) + abs(math.log2(nodes / measurement.nodes))
    if nodes > 1 and measurement.nodes > 1 and fabric != measurement.fabric:
        distance += 1.0
    return distance


def band(fit_band: tuple[float, float], same_gpu: bool, distance: float = 0.0) -> tuple[float, float]:
    """The slowest and fastest plausible whole run, as shares of the expected MFU.

    On the measured GPU the goodput range, its slow end DOUBLING_STEP lower for each doubling ``distance`` away from
    the measured layout (down to the transfer band's low end), its fast end the goodput's (the expected MFU over the
    goodput: the measured steady rate times the model's transfer). On another GPU the transfer band, which holds the
    goodput range: the band is read off whole runs predicted from whole runs, so each side's restarts are already in
    its spread (compounding the two would count them twice).
    """
    g_low, g_high = GOODPUT_RANGE[0] / GOODPUT, GOODPUT_RANGE[1] / GOODPUT
    floor = min(fit_band[0], g_low)
    if same_gpu:
        return max(g_low * DOUBLING_STEP**distance, floor), g_high
    return floor, max(fit_band[1], g_high)
