"""The `netbraid` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .api import jain_fairness, run_resolved
from .errors import ScenarioError
from .resolve import resolve
from .results_dir import write_run
from .scenario_io import load_scenario
from .units import format_rate

app = typer.Typer(
    help="netbraid: throughput, loss and fairness of (multipath) transports over the paths you describe.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Off a terminal rich assumes 80 columns, which folds the flow table; use more.
out_console = Console(width=None if sys.stdout.isatty() else 130)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 130)

SET_HELP = "Change a scenario field: PATH=VALUE, e.g. links.0.rate=20Mbps or flows.bulk.cc=cubic (repeatable)."


def fail(e: Exception, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {e}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    seed: Optional[int] = typer.Option(None, help="Random seed (overrides the scenario's)."),
    out: Optional[Path] = typer.Option(None, help="Write results, the resolved scenario and the command here."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document instead of tables."),
    pcap: list[str] = typer.Option([], help="Capture a link direction, written FROM->TO (quote it), as pcap (repeatable)."),
    backend: str = typer.Option("sim", help="Backend: sim (the simulator)."),
) -> None:
    """Run one scenario and print per-flow results."""
    if backend != "sim":
        fail(ScenarioError(f"--backend: {backend!r} is not available yet (allowed: sim)"))
    if seed is not None and not 0 <= seed < 2**64:
        fail(ScenarioError(f"--seed: {seed} is out of range (allowed: 0 to 2^64-1)"))
    try:
        s = load_scenario(scenario, set_)
        pcap_dir = out if out is not None else Path(".")
        if pcap:
            pcap_dir.mkdir(parents=True, exist_ok=True)
        captures = [(d, str(pcap_dir / f"{d.replace('->', '_to_')}.pcap")) for d in pcap]
        resolved = resolve(s, seed=seed, pcap=captures)
        result = run_resolved(resolved)
    except ScenarioError as e:
        fail(e)
        return
    if out is not None:
        write_run(out, result, resolved, s.model_dump(mode="json", by_alias=True, exclude_none=True))
    if json_out:
        doc = {k: v for k, v in result.items() if k != "series"}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    print_result(result)
    for _, path in captures:
        out_console.print(f"pcap written: {path}")
    if out is not None:
        out_console.print(f"results written to {out}/")


@app.command("resolve")
def resolve_command(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    seed: Optional[int] = typer.Option(None),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
) -> None:
    """Print the resolved scenario (JSON) that the simulator runs; `netbraid-sim` runs it without Python."""
    try:
        resolved = resolve(load_scenario(scenario, set_), seed=seed)
    except ScenarioError as e:
        fail(e)
        return
    text = json.dumps(resolved, indent=2)
    if output:
        output.write_text(text)
    else:
        sys.stdout.write(text + "\n")



@app.command()
def validate(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
) -> None:
    """Check a scenario without running it."""
    try:
        resolved = resolve(load_scenario(scenario, set_))
    except ScenarioError as e:
        fail(e)
        return
    out_console.print(
        f"[green]ok[/]: {len(resolved['nodes'])} nodes, {len(resolved['links'])} links, "
        f"{len(resolved['flows'])} flows, {resolved['duration_ns'] / 1e9:g} s"
    )


def _fmt(v: Any, scale: float = 1.0, digits: int = 3) -> str:
    return "–" if v is None else f"{v * scale:.{digits}g}"


def print_result(result: dict[str, Any]) -> None:
    window = result["measure_stop_s"] - result["measure_start_s"]
    t = Table(title=f"{result['scenario']}: {window:g} s measured (seed {result['seed']})")
    for col, justify in [("flow", "left"), ("kind", "left"), ("path", "left"), ("throughput", "right"),
                         ("goodput", "right"), ("loss %", "right"), ("retx", "right"), ("RTOs", "right"),
                         ("RTT ms", "right"), ("cwnd KB", "right")]:
        t.add_column(col, justify=justify)
    for f in result["flows"]:
        t.add_row(
            f["name"], f["kind"], f"{f['src']} → {f['dst']}",
            format_rate(f["throughput_bps"]), format_rate(f["goodput_bps"]),
            f"{100 * f['loss_rate']:.3g}", str(f["retransmits"]),
            str(f["timeouts"]) if f["kind"] == "tcp" else "–",
            _fmt(f["rtt_mean_s"], 1e3), _fmt(f["cwnd_mean_bytes"], 1 / 1024),
        )
    out_console.print(t)
    busy = [l for l in result["links"] if l["queue_drops"] or l["loss_drops"] or l["utilisation"] >= 0.5]
    if busy:
        lt = Table(title="busy or lossy link directions")
        for col in ("link", "rate", "utilisation %", "queue drops", "loss drops"):
            lt.add_column(col, justify="left" if col == "link" else "right")
        for l in sorted(busy, key=lambda l: -l["utilisation"])[:12]:
            lt.add_row(l["name"], format_rate(l["rate_bps"]), f"{100 * l['utilisation']:.1f}",
                       str(l["queue_drops"]), str(l["loss_drops"]))
        out_console.print(lt)
    for f in result["flows"]:
        if f["completion_time_s"] is not None:
            out_console.print(f"{f['name']}: transfer completed at {f['completion_time_s']:.3f} s")
    goodputs = [f["goodput_bps"] for f in result["flows"]]
    line = f"aggregate goodput {format_rate(sum(goodputs))}"
    if len(goodputs) > 1:
        line += f", Jain fairness {jain_fairness(goodputs):.3f}"
    rate = result["events"] / result["wall_s"] if result["wall_s"] > 0 else float("inf")
    line += f" · {result['events']:,} events in {result['wall_s']:.3f} s ({rate / 1e6:.2f} M events/s)"
    out_console.print(line)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
