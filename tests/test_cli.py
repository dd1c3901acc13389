"""The command line follows its ecosystem's conventions: a version flag that
reports the installed package's version, and -h beside --help on every
command."""

import subprocess
from importlib.metadata import version

import pytest


def netbraid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["netbraid", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_packages(flag):
    r = netbraid(flag)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"netbraid {version('netbraid')}"


@pytest.mark.parametrize("args", [[], ["run"], ["sweep"], ["compare"], ["report"], ["paper"], ["emu"], ["emu", "check"]])
def test_short_help_on_every_command(args):
    short, long = netbraid(*args, "-h"), netbraid(*args, "--help")
    assert short.returncode == 0 and short.stdout == long.stdout
    assert "Usage: netbraid" in short.stdout
    # an on/off flag takes no value: no metavar beside it
    assert "<bool>" not in short.stdout


def test_shell_completion_is_offered():
    # --install-completion writes to the user's shell start-up files, so the test asks for the script only
    # typer finds the shell among the command's ancestors: run it under one
    # ("; true" keeps bash from exec-ing netbraid in its place)
    r = subprocess.run(["bash", "-c", "netbraid --show-completion bash; true"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "_netbraid_completion" in r.stdout and "complete " in r.stdout, r.stderr
    assert "--install-completion" in subprocess.run(["netbraid", "-h"], capture_output=True, text=True).stdout


def test_jain_fairness_is_per_kind_of_flow(tmp_path):
    # two TCP flows and two CBR streams on one link: a fairness index over all
    # four would mix flows that compete for a share with flows that do not
    path = tmp_path / "mixed.toml"
    path.write_text('duration = "5s"\n[[hosts]]\nname = "a"\n[[hosts]]\nname = "b"\n'
                    '[[links]]\na = "a"\nb = "b"\nrate = "10Mbps"\ndelay = "5ms"\n'
                    + "".join(f'[[flows]]\nname = "t{i}"\nfrom = "a"\nto = "b"\n' for i in range(2))
                    + "".join(f'[[flows]]\nname = "u{i}"\nkind = "cbr"\nrate = "{i + 1}Mbps"\nfrom = "a"\nto = "b"\n'
                              for i in range(2)))
    r = netbraid("run", str(path))
    assert r.returncode == 0, r.stderr
    last = " ".join(r.stdout.split("aggregate goodput")[-1].split())  # the summary line, however wrapped
    assert "over 2 tcp flows" in last and "over 2 udp flows" in last, last
    # 1 and 2 Mb/s CBR: (1 + 2)^2 / (2 * (1 + 4)) = 0.9 for the UDP pair (± packets cut by the window)
    udp = float(last.split(" over 2 udp flows")[0].rsplit(" ", 1)[1])
    assert abs(udp - 0.9) < 0.01, last


def test_plot_draws_one_runs_time_series_and_names_what_exists(tmp_path):
    out = tmp_path / "r1"
    r = netbraid("run", "examples/tcp_and_cbr.toml", "--set", "measure.interval=500ms", "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = netbraid("plot", str(out), "--what", "cwnd")
    assert r.returncode == 0, r.stderr
    png = out / "plots" / "cwnd-r0.png"
    from PIL import Image

    with Image.open(png) as im:  # drawn, and titled with what it shows
        assert im.size[0] > 600 and im.info["Title"] == "congestion window (KB) over time (run r0, seed 1)"
    r = netbraid("plot", str(out), "--what", "queue", "--link", "r1->r9")
    assert r.returncode != 0 and "no link 'r1->r9'" in r.stderr and "r1->r2" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = netbraid("plot", str(out), "--what", "delay")
    assert r.returncode != 0 and "goodput, throughput, cwnd, rtt, queue" in r.stderr
    # --out names the file and its format (it used to write FILE.png and FILE.svg whatever the name said)
    r = netbraid("plot", str(out), "--out", str(tmp_path / "g.pdf"))
    assert r.returncode == 0 and (tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-", r.stderr
    assert not (tmp_path / "g.png").exists() and not (tmp_path / "g.svg").exists()
    r = netbraid("plot", str(out), "--out", str(tmp_path / "g.jpg"))
    assert r.returncode == 2 and "allowed: .png, .svg, .pdf" in r.stderr, r.stderr
