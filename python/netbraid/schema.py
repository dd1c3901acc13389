"""The scenario schema: what users write in TOML or build in Python.

One pydantic model per section. Quantities take units (see ``units``); every
model rejects unknown fields with the list of allowed ones. A validated
``Scenario`` still names nodes by name and may contain groups; ``resolve``
turns it into the flat, indexed form the simulator runs.
"""

from __future__ import annotations

import contextvars
import math
import re
from contextlib import contextmanager
from typing import Annotated, Any, Iterator, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, ValidationError, field_validator, model_validator

from . import units

# ---- field types -----------------------------------------------------------

# Stored as integers (bit/s, ns, bytes); dumped back with their unit, so a
# dumped scenario validates again to the same values.
# Written back as the text they parse from, in the largest exact unit ("40s", "10Mbps", "64KB").
Rate = Annotated[int, BeforeValidator(units.parse_rate), PlainSerializer(units.exact_rate, return_type=str)]
Time = Annotated[int, BeforeValidator(units.parse_time), PlainSerializer(units.exact_time, return_type=str)]
Size = Annotated[int, BeforeValidator(units.parse_size), PlainSerializer(units.exact_size, return_type=str)]
QueueLimit = Annotated[
    tuple[str, int],
    BeforeValidator(units.parse_queue),
    PlainSerializer(lambda v: f"{v[1]}p" if v[0] == "packets" else units.exact_size(v[1]), return_type=str),
]
Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
# Strict: true/"yes" are not numbers, 1.5 is not a count.
Count = Annotated[int, Field(ge=1, le=10**6, strict=True)]
Index = Annotated[int, Field(ge=0, le=10**6, strict=True)]
Flag = Annotated[bool, Field(strict=True)]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def _check_name(v: str) -> str:
    if not isinstance(v, str) or not _NAME.match(v) or "->" in v:
        raise ValueError(
            f"{v!r} is not a valid name (letters, digits, '_', '.', '-'; starting with a letter or '_')"
        )
    return v


Name = Annotated[str, BeforeValidator(_check_name)]
_CC_PARAM = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def _check_cc_params(v: Any) -> Any:
    """A table of numbers and flags. Which parameters a controller has, their
    kind and range, the simulator's list of controllers says (and checks)."""
    if not isinstance(v, dict):
        raise ValueError(f"must be a table of parameters, e.g. {{beta = 0.5}} (got {v!r})")
    out: dict[str, float | bool] = {}
    for key, value in v.items():
        if not isinstance(key, str) or not _CC_PARAM.match(key):
            raise ValueError(f"{key!r} is not a parameter name (lower-case letters, digits and '_')")
        if isinstance(value, bool):
            out[key] = value
        elif isinstance(value, (int, float)) and math.isfinite(value):
            out[key] = float(value)
        else:
            raise ValueError(f"{key} = {value!r} is not allowed (a number, or true / false)")
    return out


CcParams = Annotated[dict[str, Union[bool, float]], BeforeValidator(_check_cc_params)]


_validating: contextvars.ContextVar[bool] = contextvars.ContextVar("netbraid_validating", default=False)


@contextmanager
def _outermost() -> Iterator[bool]:
    """True for the outermost validation in progress (in this thread or task)."""
    if _validating.get():
        yield False
        return
    token = _validating.set(True)
    try:
        yield True
    finally:
        _validating.reset(token)


def _scenario_error(e: ValidationError, model: type | None = None) -> Exception:
    from .errors import from_validation_error

    # a model built alone (nb.TcpOptions(...)) is named by its class, not "scenario"
    root = "scenario" if model is None or model.__name__ == "Scenario" else model.__name__
    return from_validation_error(e, root=root)


class Strict(BaseModel):
    """Rejects unknown fields, naming the ones that are allowed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    # Mistakes made in Python code get the same ScenarioError as in files,
    # on construction (nb.TcpOptions(...)), assignment and model_validate.
    # Pydantic calls __init__ of nested models while it validates the outer
    # one: only the outermost call converts, so nested errors keep their
    # place in pydantic's error list (and so their full field path).
    def __init__(self, **data: Any) -> None:
        with _outermost() as outer:
            if not outer:
                super().__init__(**data)
                return
            try:
                super().__init__(**data)
            except ValidationError as e:
                raise _scenario_error(e, type(self)) from None

    def __setattr__(self, name: str, value: Any) -> None:
        with _outermost() as outer:
            if not outer:
                super().__setattr__(name, value)
                return
            try:
                super().__setattr__(name, value)
            except ValidationError as e:
                raise _scenario_error(e) from None

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        with _outermost():
            return super().model_validate(obj, **kwargs)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = {f.alias or n for n, f in cls.model_fields.items()} | set(cls.model_fields)
            unknown = [k for k in data if k not in allowed]
            if unknown:
                shown = sorted(f.alias or n for n, f in cls.model_fields.items())
                raise ValueError(f"unknown field {unknown[0]!r}; allowed fields: {', '.join(shown)}")
        return data


# ---- links -----------------------------------------------------------------


class NoLoss(Strict):
    model: Literal["none"]


class BernoulliLoss(Strict):
    model: Literal["bernoulli"]
    p: Probability


class GilbertElliottLoss(Strict):
    """Two-state Markov loss: good→bad with p_gb, bad→good with p_bg per packet."""

    model: Literal["gilbert_elliott"]
    p_gb: Probability
    p_bg: Probability
    loss_good: Probability = 0.0
    loss_bad: Probability = 1.0


class ListLoss(Strict):
    """Drop exactly these packets (0-based, in this direction's transmission order)."""

    model: Literal["list"]
    indices: list[Annotated[int, Field(ge=0, lt=2**63, strict=True)]]


#: The loss models' names (the `model` of each loss table above).
LOSS_MODELS = "none, bernoulli, gilbert_elliott, list"


def _loss_shorthand(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError("loss must be a probability (0 to 1) or a table with a 'model'")
    if isinstance(v, (int, float)):
        if not 0 <= v <= 1:
            raise ValueError(f"{v} is not a probability (allowed: 0 to 1)")
        return {"model": "bernoulli", "p": float(v)} if v > 0 else {"model": "none"}
    if isinstance(v, str):
        # "1%" or "0.01" as text: a probability is a number (tc's and Mininet's "1%" is 0.01 here)
        text = v.strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            number = None
        hint = f" (loss = {number:g})" if number is not None and 0 <= number <= 1 else ""
        raise ValueError(f"{v!r} is text; loss is a probability from 0 to 1 as a number{hint}, or a table with "
                         f"a 'model' ({LOSS_MODELS})")
    if isinstance(v, dict) and "model" not in v:
        raise ValueError(f"a loss table needs 'model': one of {LOSS_MODELS}")
    if isinstance(v, dict) and v["model"] not in LOSS_MODELS.split(", "):
        raise ValueError(f"loss model {v['model']!r} is not one of {LOSS_MODELS}")
    return v


Loss = Annotated[
    Union[NoLoss, BernoulliLoss, GilbertElliottLoss, ListLoss],
    Field(discriminator="model"),
    BeforeValidator(_loss_shorthand),
]


class RedOptions(Strict):
    """RED in front of a link's FIFO (Floyd & Jacobson 1993), with ns-2's
    defaults: thresholds on the average queue in packets, `max_p` the drop
    probability at `max_th`, `w_q` the averaging weight, `gentle` ramping on
    to 1 at 2·max_th, `ecn` marking ECN-capable packets instead of dropping."""

    min_th: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 5.0
    max_th: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] = 15.0
    max_p: Probability = 0.1
    w_q: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.002
    gentle: Flag = True
    ecn: Flag = False

    @model_validator(mode="after")
    def _ordered(self) -> "RedOptions":
        if self.max_th <= self.min_th:
            raise ValueError(f"max_th ({self.max_th}) must be above min_th ({self.min_th})")
        return self


def _parse_framing(v: Any) -> Any:
    if v == "ethernet":
        return ETHERNET_FRAMING
    if v == "none":
        return 0
    if isinstance(v, str):
        try:
            return units.parse_size(v)
        except ValueError as e:
            raise ValueError(f"{e}; or \"ethernet\" (38 B a packet) or \"none\"") from None
    return v


#: Ethernet's bytes around an IP packet on the wire: preamble and start
#: delimiter 8, header 14, FCS 4, inter-frame gap 12.
ETHERNET_FRAMING = 38
#: Link-layer bytes per packet: a size, "ethernet" (38) or "none".
Framing = Annotated[int, BeforeValidator(_parse_framing), Field(ge=0, le=1000, strict=True)]


class Outage(Strict):
    """The link (direction) is down from `start` until `stop`: every packet
    that would cross it then is lost (sim only)."""

    start: Time
    stop: Time

    @model_validator(mode="after")
    def _ordered(self) -> "Outage":
        if self.stop <= self.start:
            raise ValueError(f"stop ({self.stop / 1e9:g} s) must be after start ({self.start / 1e9:g} s)")
        return self


class Direction(Strict):
    """Overrides for one direction of a link."""

    rate: Optional[Rate] = None
    framing: Optional[Framing] = None
    down: Optional[list[Outage]] = None
    delay: Optional[Time] = None
    jitter: Optional[Time] = None
    queue: Optional[QueueLimit] = None
    loss: Optional[Loss] = None
    red: Optional[RedOptions] = None


class Link(Strict):
    """A point-to-point link. rate, delay, queue and loss apply to both
    directions unless `ab` (a→b) or `ba` (b→a) override them. A group name on
    either side makes one link per member (groups of equal size pair up)."""

    #: For `--set links.NAME.delay=…` and sweeps; unique among the links.
    #: Without one a link is named by its ends as written, "a-b" ("a-b#2"
    #: for the second unnamed link between the same ends).
    name: Optional[Name] = None
    a: Name
    b: Name
    rate: Rate
    #: Bytes the link layer adds to every packet ("ethernet": 38, with
    #: preamble, header, FCS and inter-frame gap), so `rate` is the line
    #: rate: they take transmission time (sim only; default none).
    framing: Framing = 0
    #: Outages, e.g. [{start = "20s", stop = "40s"}]: a cut cable (sim only).
    down: list[Outage] = []
    delay: Time = 0
    #: Each packet arrives within ±jitter of `delay` (uniformly), never
    #: before the packet ahead of it: delay variation without reordering, as
    #: netem's jitter when it keeps order. At most the delay.
    jitter: Time = 0
    queue: QueueLimit = ("packets", 100)
    loss: Loss = NoLoss(model="none")
    red: Optional[RedOptions] = None
    ab: Optional[Direction] = None
    ba: Optional[Direction] = None


# ---- nodes -----------------------------------------------------------------


class Host(Strict):
    """An end host. With `count`, a group: name0, name1, …"""

    name: Name
    count: Optional[Count] = None


class Router(Strict):
    """A forwarding node. With `count`, a group.

    `multipath` says how it uses several equal-cost next hops: "none" (the
    lowest link), "round_robin" (per packet, ns-2's multiPath_: one counter
    per destination shared by all flows), "ecmp" (per flow, by hashing its
    addresses and ports), "weighted" (per packet, in proportion to the links' rates)."""

    name: Name
    count: Optional[Count] = None
    multipath: Literal["none", "round_robin", "ecmp", "weighted"] = "none"


# ---- TCP -------------------------------------------------------------------


#: A congestion controller's name, as the simulator and Linux write them.
CC_NAME = r"^[a-z][a-z0-9_-]{0,15}$"


class TcpOptions(Strict):
    """TCP settings. At the top level (`[tcp]`) they are defaults for every
    TCP flow; on a flow they override those. Unset = built-in default."""

    #: A bundle of defaults under the fields set here: "rfc" (the RFCs'
    #: values, the default) or "linux" (what this kernel does, as far as the
    #: simulator models it: IW10, 200 ms minimum RTO, MSS 1448 with
    #: timestamps, 40 ms delayed-ACK timer, SACK with RACK-TLP and PRR,
    #: CUBIC with β = 717/1024 and HyStart). Fields set explicitly, in [tcp]
    #: or on the flow, win over the profile. The flow's profile wins over
    #: the scenario's.
    profile: Optional[Literal["rfc", "linux"]] = None
    #: On sim, a controller the simulator has (`netbraid controllers`); on
    #: emu, what the kernel offers (see
    #: /proc/sys/net/ipv4/tcp_available_congestion_control). Checked by
    #: the backend, which knows what it has.
    cc: Optional[Annotated[str, Field(pattern=CC_NAME, strict=True)]] = None
    #: The controller's parameters by name (sim only), e.g. {beta = 0.5} for
    #: cubic: checked by the simulator against its list of controllers.
    cc_params: Optional[CcParams] = None
    recovery: Optional[Literal["tahoe", "reno", "newreno", "sack"]] = None
    mss: Optional[Annotated[int, Field(ge=1, le=65495, strict=True)]] = None
    header_bytes: Optional[Annotated[int, Field(ge=0, le=120, strict=True)]] = None
    initial_window: Optional[Count] = None
    initial_ssthresh: Optional[Size] = None
    window: Optional[Size] = None
    rcvbuf: Optional[Size] = None
    sndbuf: Optional[Size] = None
    rto_min: Optional[Time] = None
    rto_max: Optional[Time] = None
    rto_initial: Optional[Time] = None
    delayed_ack: Optional[Flag] = None
    delack_timeout: Optional[Time] = None
    delack_count: Optional[Count] = None
    #: Linux's quick-ACK mode: the first this-many segments (and the first
    #: after an idle second) are ACKed at once; 0 = none (RFC 5681).
    quick_acks: Optional[Annotated[int, Field(ge=0, le=1000, strict=True)]] = None
    #: Linux's SACK compression (net.ipv4.tcp_comp_sack_nr, 44 there):
    #: while data is out of order, after the first three duplicate ACKs for
    #: a hole, one ACK stands for up to this many, sent at the latest
    #: sack_compression_delay after the first it holds; 0 = off (RFC 5681).
    sack_compression: Optional[Annotated[int, Field(ge=0, le=255, strict=True)]] = None
    sack_compression_delay: Optional[Time] = None
    abc_limit: Optional[Count] = None
    #: Congestion avoidance grows one MSS per cwnd of bytes ACKed (RFC 3465,
    #: as Linux counts ACKed segments) instead of MSS²/cwnd per ACK (RFC 5681).
    byte_counting: Optional[Flag] = None
    dupthresh: Optional[Count] = None
    limited_transmit: Optional[Flag] = None
    max_sack_blocks: Optional[Annotated[int, Field(ge=1, le=4, strict=True)]] = None
    log_congestion: Optional[Flag] = None
    ecn: Optional[Flag] = None
    #: TCP_NODELAY: send short segments at once instead of holding them
    #: while data is unacknowledged (Nagle's rule).
    nodelay: Optional[Flag] = None
    #: "rfc" (default), or "ns2" for ns-2's Agent/TCP where it departs from
    #: the RFCs (limited transmit, ssthresh rounding, dupack counting; see
    #: docs/scenario.md) — for reproducing ns-2 studies, sim only.
    semantics: Optional[Literal["rfc", "ns2"]] = None
    #: RACK (RFC 8985): loss detected by time (a segment sent before one
    #: already delivered, after an RTT and a reordering window) instead of
    #: by three duplicate ACKs; finds lost retransmissions without a
    #: timeout. Needs recovery = "sack". Sim only (the kernel has its own).
    rack: Optional[Flag] = None
    #: TLP (RFC 8985): a probe when the flight goes quiet for two round
    #: trips, so a loss at the tail is repaired without a timeout. Needs rack.
    tlp: Optional[Flag] = None
    #: PRR (RFC 6937, with the slow-start reduction bound, as Linux): in
    #: recovery, send in step with what each ACK delivers, so the window comes
    #: down to ssthresh smoothly. Needs recovery = "sack". Sim only.
    prr: Optional[Flag] = None
    #: ssthresh after a loss (and PRR's divisor) from the congestion window,
    #: as Linux's controllers compute it, instead of from FlightSize as the
    #: RFCs do (RFC 5681 leaves out what limited transmit sent: at a window
    #: of a few segments that halves ssthresh again). Sim only.
    ssthresh_from_cwnd: Optional[Flag] = None
    #: The kernel tick RACK's reordering timer and the loss probe run on, as
    #: Linux counts them in jiffies (1/CONFIG_HZ: "4ms" at HZ = 250, this
    #: machine's kernel): the reordering timer waits what is left plus 2 ms,
    #: the probe 2·SRTT plus 2 ms, rounded up to ticks. "0s" = exact (RFC 8985). Sim only.
    timer_tick: Optional[Time] = None
    #: Linux's RTO (tcp_rtt_estimator, tcp_set_rto): a sample on every ACK
    #: of new data and RTO = SRTT + max(the round trip's largest deviation,
    #: rto_min), instead of RFC 6298's max(SRTT + 4·RTTVAR, rto_min) from
    #: one timed segment per round trip. On in profile "linux". Sim only.
    linux_rto: Optional[Flag] = None
    #: D-SACK (RFC 2883) and undo, as Linux: the receiver reports a
    #: duplicate segment in the first SACK block; the sender undoes a window
    #: reduction whose retransmissions all prove needless. Needs recovery
    #: "sack". On in profile "linux". Sim only.
    dsack: Optional[Flag] = None
    #: The socket buffers as this machine's Linux (6.18) sizes them: a set
    #: rcvbuf / sndbuf / window (SO_RCVBUF, SO_SNDBUF, iperf3 -w) is doubled
    #: (at most 2 × 4 MB) and the window is the doubled receive buffer times
    #: `scaling_ratio`; unset buffers autotune up to 32 MB (receive, times
    #: the ratio) and 4 MB (send). Off: rcvbuf is the window and sndbuf the
    #: send buffer (the RFCs; Linux before 6.6). On in profile "linux". Sim only.
    linux_buffers: Optional[Flag] = None
    #: With linux_buffers: the share of receive-buffer memory that is payload
    #: (Linux's scaling_ratio / 256; 162/256 = 0.633 on this machine's veth
    #: links), the window's share of the buffer. Sim only.
    scaling_ratio: Optional[Annotated[float, Field(gt=0, le=1)]] = None

    @field_validator("cc", mode="before")
    @classmethod
    def _controller_name(cls, v: Any) -> Any:
        # ("Cubic" or ns-3's "TcpNewReno" met only the pattern's wording)
        if isinstance(v, str) and not re.fullmatch(CC_NAME, v):
            from .controllers import controllers

            known = {c["name"] for c in controllers()} | {"newreno"}
            guess = next((g for g in (v.lower(), v.lower().removeprefix("tcp")) if g in known), None)
            raise ValueError(f"{v!r} is not a controller name: names are lowercase letters, digits, '-' and '_' "
                             f"(up to 16)" + (f"; did you mean {guess!r}?" if guess else "")
                             + " — `netbraid controllers` lists the simulator's")
        return v


TCP_FIELDS = tuple(TcpOptions.model_fields)
#: MPTCP's own settings on a flow (simulator only)
MPTCP_FIELDS = ("subflows", "paths", "scheduler", "backup", "opportunistic_retransmission", "penalisation",
                "reinjection")


# ---- SCTP ------------------------------------------------------------------


class SctpOptions(Strict):
    """SCTP settings (simulator). At the top level (`[sctp]`) they are
    defaults for every SCTP flow; on a flow (`sctp = {...}`) they override
    those. Unset = the profile's value.

    `profile`: "rfc9260" (the default: RTO.Initial 1 s), "rfc4960" (its
    constants: RTO.Initial 3 s) or "freebsd" (FreeBSD 9's SCTP, which seed
    000 ran: RTO.Initial 3 s, initial cwnd 3·(MTU − 12), Max.Burst 4,
    ssthresh after a fast retransmit at least 2 MTUs, 256 B charged per chunk
    against the peer's window and per chunk held by the receiver, RTX-CWND,
    DAC off). `sfr`, `cuc`, `dac`: CMT's Split Fast Retransmit, Cwnd Update
    and Delayed ACK (default on, except DAC in the FreeBSD profile)."""

    profile: Optional[Literal["rfc9260", "rfc4960", "freebsd"]] = None
    mtu: Optional[Annotated[int, Field(ge=52, le=65535, strict=True)]] = None
    rto_initial: Optional[Annotated[Time, Field(gt=0)]] = None
    rto_min: Optional[Annotated[Time, Field(gt=0)]] = None
    rto_max: Optional[Annotated[Time, Field(gt=0)]] = None
    path_max_retrans: Optional[Annotated[int, Field(ge=0, le=100, strict=True)]] = None
    assoc_max_retrans: Optional[Annotated[int, Field(ge=0, le=1000, strict=True)]] = None
    hb_interval: Optional[Annotated[Time, Field(gt=0)]] = None
    sack_delay: Optional[Annotated[Time, Field(gt=0)]] = None
    sack_freq: Optional[Annotated[int, Field(ge=1, le=1000, strict=True)]] = None
    #: Most packets sent to one destination at a time; 0 = no limit.
    max_burst: Optional[Annotated[int, Field(ge=0, le=1000, strict=True)]] = None
    initial_cwnd: Optional[Annotated[Size, Field(ge=1)]] = None
    abc_limit: Optional[Annotated[int, Field(ge=1, le=1000, strict=True)]] = None
    fast_rtx_threshold: Optional[Annotated[int, Field(ge=1, le=1000, strict=True)]] = None
    fr_min_mtus: Optional[Annotated[int, Field(ge=1, le=1000, strict=True)]] = None
    sender_chunk_overhead: Optional[Annotated[int, Field(ge=0, le=65536, strict=True)]] = None
    receiver_chunk_overhead: Optional[Annotated[int, Field(ge=0, le=65536, strict=True)]] = None
    rtx_to_alternate: Optional[Flag] = None
    sfr: Optional[Flag] = None
    cuc: Optional[Flag] = None
    dac: Optional[Flag] = None

    @field_validator("sack_delay")
    @classmethod
    def _sack_delay(cls, v: Optional[int]) -> Optional[int]:
        if v is not None and v > 500_000_000:
            raise ValueError(f"{units.exact_time(v)} is not allowed (above 0, at most 500ms: RFC 9260 §6.2)")
        return v


SCTP_OPTION_FIELDS = tuple(f for f in SctpOptions.model_fields if f != "profile")
#: SCTP's own settings on a flow
SCTP_FIELDS = ("cmt", "primary", "rtx_policy", "message_size", "sctp")
#: TCP settings an SCTP flow takes too: its socket buffers
SCTP_TCP_FIELDS = ("rcvbuf", "sndbuf", "window")
RTX_POLICIES = ("same", "asap", "cwnd", "ssthresh", "lossrate")

# ---- traffic ---------------------------------------------------------------


class SubflowPath(Strict):
    """One path of a multipath flow given explicitly: from the source's
    interface `from_iface` to the destination's `to_iface`. For MPTCP, a
    subflow as an `ip mptcp endpoint` entry (default `to_iface`: the flow's,
    else the destination's first), `backup` as in `ip mptcp endpoint …
    backup`. For SCTP, a pair of the association's addresses (default
    `to_iface`: the destination's interface with the same index)."""

    from_iface: Index
    to_iface: Optional[Index] = None
    backup: Flag = False


class Proxy(Strict):
    """A split-TCP proxy (a PEP, or an overlay relay) on a router on the
    flows' route. For every flow that names its node in `via`, it terminates the
    incoming TCP connection — acknowledging data as it arrives — and relays
    the bytes into a new TCP connection towards the next proxy or the
    destination. `buffer`: the relay buffer between its two sockets, per
    relayed flow (back-pressure: when it is full the proxy stops reading and
    the incoming window closes). `tcp`: its sockets' settings, over the
    scenario's [tcp]: the receiving side of the incoming leg (rcvbuf) and the
    sending side of the outgoing one (cc, cc_params, sndbuf, recovery, …).
    Simulator only."""

    node: Name
    buffer: Annotated[Size, Field(ge=1)] = 4 * 1024 * 1024
    tcp: TcpOptions = TcpOptions()


class Flow(TcpOptions):
    """Traffic from one host (or group) to another.

    kind = "tcp": a bulk transfer (unlimited, or `bytes`), iperf-like, to a
    receiving application that reads as data arrives or, with `read_rate`,
    no faster than that (a slow reader: its socket buffer fills and the
    receive window closes; sim only).
    kind = "mptcp": the same over MPTCP. `subflows` is the path manager:
    "per_interface" (default; as `ip mptcp endpoint add ADDR dev IF subflow`
    on every interface of the source: one subflow from each, all to the
    destination's address) or "fullmesh" (every source interface to every
    destination interface). The initial subflow leaves from `from_iface`
    (default: the source's first interface) to `to_iface` (default: the
    destination's first). `scheduler`: "default" (Linux upstream's),
    "min_rtt" (the out-of-tree kernel's), "round_robin" or "redundant"
    (every segment on every subflow); `backup`: the
    source interfaces whose subflows carry data only when no other can;
    `paths`: the subflows given one by one instead (a list of
    {from_iface, to_iface, backup}; the first is the initial subflow).
    `opportunistic_retransmission` and `penalisation`: the out-of-tree
    kernel's receive-buffer optimisations (off by default, as upstream).
    `reinjection`: "upstream" (a connection-level timer re-sends 32 KB from
    DATA_ACK on an idle subflow; a subflow silent for 4 firings is stale)
    or "subflow_timeout" (the out-of-tree kernel: a subflow's RTO sends all
    its data again on the others); default: upstream's with the default
    scheduler, the out-of-tree's with the others.
    These are simulator settings; on emu the kernel decides.
    kind = "cbr": UDP at a constant `rate` of payload, `packet_size` bytes each.
    kind = "onoff": UDP at `rate` while ON, with ON and OFF periods of mean
    `burst_time` and `idle_time` drawn from `distribution` ("exponential" or
    "pareto" with `shape`), as ns-2's Application/Traffic/Exponential and
    /Pareto (default packet size 210 B, as ns-2). For UDP kinds,
    `header_bytes` is the IP + UDP header per datagram (28; ns-2 adds none: 0).
    kind = "sctp": the same over an SCTP association (simulator): one path
    per pair of addresses, by default source interface k with destination
    interface k for every k both hosts have (two dual-homed hosts: two
    disjoint paths), or `paths` given one by one ({from_iface, to_iface}).
    `cmt`: Concurrent Multipath Transfer (new data on every path; default
    false: plain SCTP sends new data on the primary path and uses the
    others for retransmissions after a timeout and for failover).
    `primary`: the primary path's index in the list (default 0).
    `rtx_policy` (CMT): where retransmissions go: "same", "asap", "cwnd"
    (FreeBSD's, the default), "ssthresh" or "lossrate". `rcvbuf` / `sndbuf`
    (or `window` for both): the socket buffers (default 256 KiB, FreeBSD's);
    `message_size`: the sending program writes messages of that size (each
    cut into chunks of at most MTU − 48 bytes, small ones bundled; default:
    messages far larger than the MTU, every chunk full);
    `sctp`: the protocol's other settings (see [sctp]).
    `via` (kind = "tcp"): the nodes of the proxies the flow is relayed
    through, in path order (each declared in [[proxies]] and on the route):
    one TCP connection per leg; the flow's own TCP settings are the end
    hosts' (the source's sender, the destination's receiver).
    With groups, members pair up; `count` makes that many parallel flows per
    pair; flow k starts at `start + k × start_step`, plus a random offset in
    [0, start_jitter) drawn from the run's seed (so replications differ).
    """

    name: Name
    kind: Literal["tcp", "mptcp", "sctp", "cbr", "onoff"] = "tcp"
    src: Name = Field(alias="from")
    dst: Name = Field(alias="to")
    from_iface: Optional[Index] = None
    to_iface: Optional[Index] = None
    count: Count = 1
    start: Time = 0
    start_step: Time = 0
    start_jitter: Time = 0
    stop: Optional[Time] = None
    bytes: Optional[Annotated[Size, Field(ge=1)]] = None
    read_rate: Optional[Rate] = None
    subflows: Optional[Literal["per_interface", "fullmesh"]] = None
    paths: Optional[Annotated[list[SubflowPath], Field(min_length=1, max_length=64)]] = None
    scheduler: Optional[Literal["default", "min_rtt", "round_robin", "redundant"]] = None
    backup: Optional[list[Index]] = None
    opportunistic_retransmission: Optional[Flag] = None
    penalisation: Optional[Flag] = None
    reinjection: Optional[Literal["upstream", "subflow_timeout"]] = None
    via: Optional[Annotated[list[Name], Field(max_length=16)]] = None
    cmt: Optional[Flag] = None
    primary: Optional[Index] = None
    rtx_policy: Optional[Literal[RTX_POLICIES]] = None
    message_size: Optional[Annotated[Size, Field(ge=1, le=2**31)]] = None
    sctp: Optional[SctpOptions] = None
    rate: Optional[Rate] = None
    packet_size: Optional[Annotated[Size, Field(ge=1, le=65507)]] = None  # IPv4 UDP payload limit
    burst_time: Optional[Annotated[Time, Field(gt=0)]] = None
    idle_time: Optional[Annotated[Time, Field(gt=0)]] = None
    distribution: Optional[Literal["exponential", "pareto"]] = None
    shape: Optional[Annotated[float, Field(gt=1.0, le=100.0, allow_inf_nan=False)]] = None

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "Flow":
        onoff_only = ("burst_time", "idle_time", "distribution", "shape")
        if self.via is not None and self.kind != "tcp":
            raise ValueError(f"via: only tcp flows are relayed through proxies, not kind = \"{self.kind}\"")
        if self.kind != "sctp":
            for f in SCTP_FIELDS:
                if getattr(self, f) is not None:
                    raise ValueError(f"{f}: applies only to sctp flows, not to kind = \"{self.kind}\"")
        if self.kind == "sctp":
            for f in (*MPTCP_FIELDS, *TCP_FIELDS, "read_rate"):
                if f not in ("paths", *SCTP_TCP_FIELDS) and getattr(self, f) is not None:
                    where = "SCTP settings go in sctp = {...}" if f in TCP_FIELDS else "not for SCTP"
                    raise ValueError(f"{f}: applies to tcp or mptcp flows, not to kind = \"sctp\" ({where})")
            for f in ("from_iface", "to_iface"):
                if getattr(self, f) is not None:
                    raise ValueError(f"{f}: an SCTP association has one path per address pair; give `paths` "
                                     "(and `primary`) instead")
            for k, p in enumerate(self.paths or []):
                if p.backup:
                    raise ValueError(f"paths[{k}].backup: applies to MPTCP subflows; an SCTP association "
                                     "uses its other paths for retransmissions and failover anyway")
        elif self.kind != "mptcp":
            for f in MPTCP_FIELDS:
                if getattr(self, f) is not None:
                    raise ValueError(f"{f}: applies only to mptcp flows, not to kind = \"{self.kind}\"")
        elif self.read_rate is not None:
            raise ValueError("read_rate: a slow reader is modelled for kind = \"tcp\" only (the MPTCP receiver reads as data arrives)")
        elif self.paths is not None:
            for f in ("subflows", "backup", "from_iface"):
                if getattr(self, f) is not None:
                    raise ValueError(f"{f}: not with paths (paths lists every subflow and its backup flag; "
                                     "the first is the initial one)")
        if self.kind in ("cbr", "onoff"):
            if self.rate is None:
                raise ValueError(f"rate: required for a {self.kind} flow (e.g. rate = \"1Mbps\")")
            tcp_set = [f for f in TCP_FIELDS if f != "header_bytes" and getattr(self, f) is not None]
            app_set = [f for f in ("bytes", "read_rate") if getattr(self, f) is not None]
            if tcp_set or app_set:
                bad = (tcp_set or app_set)[0]
                raise ValueError(f"{bad}: applies only to tcp flows, not to kind = \"{self.kind}\"")
            if self.kind == "cbr":
                for f in onoff_only:
                    if getattr(self, f) is not None:
                        raise ValueError(f"{f}: applies only to onoff flows, not to kind = \"cbr\"")
            else:
                for f in ("burst_time", "idle_time"):
                    if getattr(self, f) is None:
                        raise ValueError(f"{f}: required for an onoff flow (e.g. {f} = \"0.5s\")")
                if self.shape is not None and self.distribution != "pareto":
                    raise ValueError("shape: applies only to distribution = \"pareto\"")
        else:
            for f in ("rate", "packet_size", *onoff_only):
                if getattr(self, f) is not None:
                    raise ValueError(f"{f}: applies only to UDP flows (cbr, onoff), not to kind = \"tcp\"")
        return self


class Route(Strict):
    """A static route: at `node`, traffic for host `to` (all its interfaces,
    or interface `to_iface`) goes to the neighbour `via`."""

    node: Name
    to: Name
    to_iface: Optional[Index] = None
    via: Name


class Measure(Strict):
    """The measurement window (so warm-up can be left out) and the time-series interval."""

    start: Time = 0
    stop: Optional[Time] = None
    interval: Optional[Time] = None

    @field_validator("interval")
    @classmethod
    def _positive(cls, v: Optional[int]) -> Optional[int]:
        if v is not None and v <= 0:
            raise ValueError("must be longer than zero")
        return v


class Sweep(Strict):
    """Axes to sweep, declared in the scenario (`netbraid sweep` adds its own
    --grid / --zip to these). Keys are field paths as for --set."""

    grid: dict[str, list[Any]] = {}
    zip: dict[str, list[Any]] = {}
    reps: Optional[Count] = None

    @field_validator("grid", "zip")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for path, values in v.items():
            if not values:
                raise ValueError(f"{path!r}: give at least one value")
        return v


class Scenario(Strict):
    """A network and the traffic on it."""

    name: str = "scenario"
    duration: Time
    seed: Annotated[int, Field(ge=0, lt=2**64, strict=True)] = 1
    tcp: TcpOptions = TcpOptions()
    sctp: SctpOptions = SctpOptions()
    hosts: list[Host] = []
    routers: list[Router] = []
    links: list[Link] = []
    flows: list[Flow] = []
    routes: list[Route] = []
    proxies: list[Proxy] = []
    measure: Measure = Measure()
    sweep: Optional[Sweep] = None

    @field_validator("duration")
    @classmethod
    def _duration_positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be longer than zero")
        return v

    # ---- building in code (the role Tcl scripts had in ns-2) -------------

    # Each returns the scenario, so calls chain. Mistakes raise ScenarioError.

    def add_host(self, name: str, count: int | None = None) -> "Scenario":
        """An end host, as ``[[hosts]]``; with `count`, a group name0, name1, …"""
        return self._append("hosts", Host, {"name": name, "count": count})

    def add_router(self, name: str, count: int | None = None, multipath: str | None = None) -> "Scenario":
        """A router, as ``[[routers]]`` (`multipath`: "ecmp", "round_robin", …)."""
        return self._append("routers", Router, {"name": name, "count": count, "multipath": multipath})

    def add_link(self, a: str, b: str, **fields: Any) -> "Scenario":
        """A link between nodes (or groups) `a` and `b`, as ``[[links]]``:
        ``rate="10Mbps", delay="5ms", queue="100p", loss=0.01, name="wan"``,
        per direction ``ab={...}`` / ``ba={...}``."""
        return self._append("links", Link, {"a": a, "b": b, **fields})

    def add_flow(self, name: str, src: str | None = None, dst: str | None = None, **fields: Any) -> "Scenario":
        """A flow, as ``[[flows]]``: from `src` to `dst` (or, with the TOML
        names, ``**{"from": "a", "to": "b"}`` / ``to="b"``), and any flow
        field: ``kind="cbr", rate="4Mbps", cc="cubic", start="1s"``."""
        src = fields.pop("from", src)
        dst = fields.pop("to", dst)
        if src is None or dst is None:
            from .errors import ScenarioError

            raise ScenarioError(f"flows[{len(self.flows)}] ({name}): give where it goes from and to: "
                                f"add_flow({name!r}, 'a', 'b') or add_flow({name!r}, **{{'from': 'a', 'to': 'b'}})")
        return self._append("flows", Flow, {"name": name, "from": src, "to": dst, **fields})

    def add_proxy(self, node: str, **fields: Any) -> "Scenario":
        """A split-TCP proxy on `node`, as ``[[proxies]]`` (flows pass it with ``via``)."""
        return self._append("proxies", Proxy, {"node": node, **fields})

    def add_route(self, node: str, to: str, via: str, to_iface: int | None = None) -> "Scenario":
        """A static route, as ``[[routes]]``: at `node`, traffic for `to` goes to `via`."""
        return self._append("routes", Route, {"node": node, "to": to, "via": via, "to_iface": to_iface})

    def __repr__(self) -> str:
        from .units import format_time

        count = lambda items, what: f"{len(items)} {what}{'s' if len(items) != 1 else ''}"  # noqa: E731
        return (f"Scenario({self.name!r}: {count(self.hosts, 'host')}, {count(self.routers, 'router')}, "
                f"{count(self.links, 'link')}, {count(self.flows, 'flow')}, duration {format_time(self.duration)}, "
                f"seed {self.seed})")

    def to_toml(self) -> str:
        """The scenario as a scenario file: what `netbraid run FILE` and
        ``nb.load_scenario`` read back to this same scenario (fields at their
        defaults left out; times, rates and sizes in their largest exact unit)."""
        import tomli_w

        from .units import exact_time

        data = self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
        # name and duration first, as a scenario file starts
        data = {"name": self.name, "duration": exact_time(self.duration),
                **{k: v for k, v in data.items() if k not in ("name", "duration")}}
        return f"# written by netbraid (Scenario.to_toml)\n{tomli_w.dumps(data)}"

    def save(self, path: "str | Path") -> "Path":
        """Write the scenario to `path` as TOML (see `to_toml`); returns the path."""
        from pathlib import Path

        from .errors import ScenarioError

        target = Path(path)
        try:
            target.write_text(self.to_toml())
        except OSError as e:
            raise ScenarioError(f"save: cannot write {target}: {e.strerror or e}") from None
        return target

    def _repr_html_(self) -> str:
        """A notebook's view: the scenario's nodes, links and flows as tables."""
        import html

        from .units import format_rate, format_time

        esc = lambda v: html.escape("" if v is None else str(v))  # noqa: E731

        def table(head: list[str], rows: list[list[Any]]) -> str:
            if not rows:
                return ""
            th = "".join(f"<th>{esc(h)}</th>" for h in head)
            body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
            return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"

        from .overrides import element_names

        names = element_names([{"name": l.name, "a": l.a, "b": l.b} for l in self.links])
        nodes = [[h.name, "host", h.count or ""] for h in self.hosts] + \
                [[r.name, "router", ""] for r in self.routers]
        links = [[n, l.a, l.b, format_rate(l.rate),
                  format_time(l.delay) + (f" ± {format_time(l.jitter)}" if l.jitter else ""),
                  f"{l.queue[1]} packets" if l.queue[0] == "packets" else f"{l.queue[1]} B",
                  "" if l.loss.model == "none" else l.loss.model] for n, l in zip(names, self.links)]
        flows = [[f.name, f.kind, f.src, f.dst, f.cc or "", format_rate(f.rate) if getattr(f, "rate", None) else ""]
                 for f in self.flows]
        return (f"<div><strong>Scenario {esc(self.name)}</strong>: duration {esc(format_time(self.duration))}, "
                f"seed {self.seed}"
                + table(["node", "role", "count"], nodes)
                + table(["link", "a", "b", "rate", "delay", "queue", "loss"], links)
                + table(["flow", "kind", "from", "to", "cc", "rate"], flows) + "</div>")

    def _append(self, field: str, model: type[BaseModel], data: dict[str, Any]) -> "Scenario":
        from .errors import from_validation_error

        items = getattr(self, field)
        data = {k: v for k, v in data.items() if v is not None}
        try:
            setattr(self, field, [*items, model.model_validate(data)])
        except ValidationError as e:
            err = from_validation_error(e)
            prefix = f"{field}[{len(items)}]"
            problems = [p.replace("scenario: ", f"{prefix}: ", 1) if p.startswith("scenario: ") else f"{prefix}.{p}" for p in err.problems]
            raise type(err)(problems) from None
        return self
