"""Sim against emu on the same scenario: does the simulated result hold on
a real stack?

The simulator's TCP defaults are the RFCs' (initial window per RFC 5681,
minimum RTO 1 s, MSS 1460). Linux differs, so by default `compare` gives the
simulator Linux's values for every TCP field the scenario leaves unset
(`LINUX_TCP`); fields the scenario sets are used on both sides as they are.
"""

from __future__ import annotations

from typing import Any

from .api import run_resolved
from .resolve import LINUX_TCP, resolve
from .schema import Scenario

def with_linux_defaults(s: Scenario) -> Scenario:
    data = s.model_dump(mode="json", by_alias=True, exclude_none=True)
    tcp = data.setdefault("tcp", {})
    for k, v in LINUX_TCP.items():
        tcp.setdefault(k, v)
    return Scenario.model_validate(data)


def relative_difference(sim: float | None, emu: float | None) -> float | None:
    """(sim − emu) / emu: the simulator's error against the real stack."""
    if sim is None or emu is None or emu == 0:
        return None
    return (sim - emu) / emu


def compare(s: Scenario, *, seed: int | None = None, linux_defaults: bool = True) -> dict[str, Any]:
    sim_scenario = with_linux_defaults(s) if linux_defaults else s
    sim_resolved = resolve(sim_scenario, seed=seed, backend="sim")
    sim = run_resolved(sim_resolved, "sim")
    sim_paths = {f["name"]: f.get("paths") or [] for f in sim_resolved["flows"]}
    emu = run_resolved(resolve(s, seed=seed, backend="emu"), "emu")
    sim_flows = {f["name"]: f for f in sim["flows"]}
    rows = []
    for ef in emu["flows"]:
        sf = sim_flows.get(ef["name"], {})
        row = {"flow": ef["name"], "kind": ef["kind"], "subflow": None}
        for m in ("goodput_bps", "throughput_bps", "loss_rate", "retransmits", "rtt_mean_s", "cwnd_mean_bytes",
                  "pacing_rate_bps"):
            row[f"sim_{m}"], row[f"emu_{m}"] = sf.get(m), ef.get(m)
        row["goodput_rel_diff"] = relative_difference(sf.get("goodput_bps"), ef.get("goodput_bps"))
        rows.append(row)
        # subflows line up by source interface (the two backends number
        # addresses differently; each subflow leaves from its own interface)
        paths = sim_paths.get(ef["name"], [])
        sim_subs = {paths[k]["src_iface"]: x for k, x in enumerate(sf.get("subflows") or []) if k < len(paths)}
        for sub in ef.get("subflows") or []:
            ss = sim_subs.get(sub.get("src_iface"), {})
            rows.append({"flow": ef["name"], "kind": "subflow", "subflow": ss.get("name", sub["name"]),
                         "sim_goodput_bps": ss.get("goodput_bps"), "emu_goodput_bps": sub.get("goodput_bps"),
                         "emu_share": sub.get("share"),
                         "goodput_rel_diff": relative_difference(ss.get("goodput_bps"), sub.get("goodput_bps"))})
        # a relayed flow's legs line up in path order (the simulator's relay
        # beside netbraid proxy on the real stacks)
        for sl, el in zip(sf.get("legs") or [], ef.get("legs") or []):
            rows.append({"flow": ef["name"], "kind": "leg", "subflow": el["name"],
                         "sim_goodput_bps": sl.get("goodput_bps"), "emu_goodput_bps": el.get("goodput_bps"),
                         "sim_loss_rate": sl.get("loss_rate"), "emu_loss_rate": el.get("loss_rate"),
                         "sim_rtt_mean_s": sl.get("rtt_mean_s"), "emu_rtt_mean_s": el.get("rtt_mean_s"),
                         "goodput_rel_diff": relative_difference(sl.get("goodput_bps"), el.get("goodput_bps"))})
    return {"scenario": s.name, "seed": emu["seed"], "linux_defaults_on_sim": linux_defaults,
            "rows": rows, "sim": sim, "emu": emu}
