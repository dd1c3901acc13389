"""Long fuzzing of everything a user can type: mutated example scenarios
(documents and files), --set and --grid values, Python API calls; the
accepted ones are also simulated (runs of at most 10 s of simulated time).
Every input must get a clean error or a sane result (flows' goodput within
what the links can carry, loss rates in [0, 1]); a traceback or a panic is a
finding. The property is tests/mutations.py's, which tests/test_fuzz.py runs
for a minute in CI.

    python bench/fuzz.py --minutes 30    # corpus: bench/fuzz-corpus.jsonl.gz

Every input whose outcome is new (an error, per field, not seen before,
with the user's values taken out; or the first accepted input of a kind) is
kept in the corpus (gzipped JSON lines, appended); findings go to
bench/fuzz-findings/ with the input that caused them. Prints the count of
inputs tried.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import sys
import tempfile
import time
import traceback
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

import mutations  # noqa: E402

MAX_SIM_SECONDS = 2.0


_FIELD = re.compile(r"^([a-z_][a-z0-9_]*(?:\[[0-9]+\])?(?:\.[a-z_][a-z0-9_]*(?:\[[0-9]+\])?)*): (.*)$")


def shapes(outcome: str) -> set[str]:
    """One shape per problem in an outcome: the field and the first words of
    its message, with the user's values (quoted text, numbers, what follows
    "got") taken out, so that one kind of error counts once."""
    out = set()
    for line in outcome.splitlines():
        line = re.sub(r"^\S+\.toml: ", "", line.strip().removeprefix("- "))
        if not line or line.endswith("problems:"):
            continue
        m = _FIELD.match(line)
        field, message = (re.sub(r"\[[0-9]+\]", "[N]", m.group(1)), m.group(2)) if m else ("", line)
        message = re.sub(r"'[^']*'|\"[^\"]*\"", " ", message.split(", got ")[0].split(" (got ")[0])
        words = [w for w in re.findall(r"[A-Za-z_]{3,}", message) if w.isascii()]
        out.add(f"{field}: {' '.join(words[:6])}")
    return out


GZIP_MAGIC = b"\x1f\x8b\x08"


def append_to_corpus(corpus: Path, doc: dict) -> None:
    """Add one entry as a gzip member of its own (members concatenate): a
    run stopped mid-write cuts off at most that member, which
    `read_corpus` skips, and no earlier entry is lost."""
    with corpus.open("ab") as f:
        f.write(gzip.compress((json.dumps(doc, default=repr) + "\n").encode()))


def compact_corpus(corpus: Path) -> None:
    """Rewrite the corpus as one gzip member (one member per entry is
    robust but ~3× larger), through a new file put in place at once; not
    when something in it could not be read (left as it is, for a look)."""
    docs, lost = read_corpus(corpus)
    if lost:
        return
    fd, tmp = tempfile.mkstemp(dir=corpus.parent, prefix=corpus.name + ".")
    with os.fdopen(fd, "wb") as f:
        f.write(gzip.compress("".join(json.dumps(d, default=repr) + "\n" for d in docs).encode(), mtime=0))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, corpus)


def read_corpus(corpus: Path) -> tuple[list[dict], int]:
    """The corpus's entries, member by member, and how many bytes were
    skipped. A member cut off by an interrupted run ends where the next
    whole member (one that decodes to its end, checksum included) begins;
    its whole lines are kept, its last, cut line is not."""
    data = memoryview(corpus.read_bytes())  # (slices without copies)
    docs: list[dict] = []
    lost = 0
    at = 0
    while at < len(data):
        text, end = _member(data, at)
        if end is None:  # cut off
            end = data.obj.find(GZIP_MAGIC, at + 1)
            while end >= 0 and _member(data, end)[1] is None:
                end = data.obj.find(GZIP_MAGIC, end + 1)
            end = len(data) if end < 0 else end
            text = _prefix(data[at:end])
            lost += end - at
            text = text[: text.rfind(b"\n") + 1]
        for line in text.splitlines():
            try:
                doc = json.loads(line)
            except ValueError:  # (UnicodeDecodeError too)
                doc = None
            if isinstance(doc, dict):
                docs.append(doc)
            else:
                lost += len(line)
        at = end
    return docs, lost


def _member(data: memoryview, at: int) -> tuple[bytes, int | None]:
    """The gzip member at `at`, decoded, and where it ends; None if it does
    not decode to its end (cut off, or not a member)."""
    member = zlib.decompressobj(wbits=31)
    try:
        text = member.decompress(data[at:])
    except zlib.error:
        return b"", None
    return (text, len(data) - len(member.unused_data)) if member.eof else (b"", None)


def _prefix(cut: memoryview) -> bytes:
    """What a cut-off member decodes to before it ends (in small pieces, so
    that an error keeps what came before it)."""
    member = zlib.decompressobj(wbits=31)
    text = b""
    for k in range(0, len(cut), 512):
        try:
            text += member.decompress(cut[k:k + 512])
        except zlib.error:
            break
    return text


class Fuzzer:
    def __init__(self, corpus: Path, simulate: bool):
        self.corpus = corpus
        self.simulate = simulate
        self.tried = 0
        self.accepted = 0
        self.simulated = 0
        self.findings = 0
        self.seen: set[str] = set()
        self.findings_dir = corpus.with_name("fuzz-findings")
        if corpus.exists():
            docs, lost = read_corpus(corpus)
            for doc in docs:
                self.seen.update(doc.get("shapes", []))
            if lost:
                print(f"{corpus}: {lost} bytes of a cut-off write skipped ({len(docs)} entries read)", file=sys.stderr)
        self.tmp = Path(tempfile.mkdtemp(prefix="netbraid-fuzz-"))

    def keep(self, kind: str, payload: object, outcome: str) -> None:
        new = {f"{kind}: {sh}" for sh in shapes(outcome)} - self.seen
        if not new:
            return
        self.seen |= new
        doc = {"kind": kind, "input": payload, "outcome": outcome[:2000], "shapes": sorted(new)}
        append_to_corpus(self.corpus, doc)

    def finding(self, kind: str, payload: object) -> None:
        self.findings += 1
        doc = {"kind": kind, "input": payload, "traceback": traceback.format_exc()}
        digest = hashlib.sha1(doc["traceback"].encode()).hexdigest()[:12]
        self.findings_dir.mkdir(exist_ok=True)
        (self.findings_dir / f"{kind}-{digest}.json").write_text(json.dumps(doc, indent=1, default=repr))
        print(f"finding ({kind}):\n{doc['traceback']}", file=sys.stderr)

    def sane_run(self, data: dict, set_: list[str]) -> None:
        """Simulate an accepted, small scenario and check the result's bounds."""
        import netbraid as nb
        from netbraid.scenario_io import validate, with_overrides

        s = with_overrides(validate(data), set_)
        if s.duration / 1e9 > MAX_SIM_SECONDS:
            try:  # the examples run for a minute: simulate the first seconds
                s = with_overrides(s, [f"duration={MAX_SIM_SECONDS:g}s"])
            except nb.ScenarioError:
                return  # a flow or the measurement starts later
        if mutations._expanded_size(s) > 200:
            return
        if sum(l.rate for l in s.links) * s.duration / 1e9 > 5e10:  # at most ~4 M packets
            return
        try:
            result = nb.simulate(s)
        except nb.ScenarioError:
            return  # the shortened run no longer holds a flow's start or the measurement window
        self.simulated += 1
        capacity = 2 * sum(max(l.rate, (l.ab.rate if l.ab and l.ab.rate else 0), (l.ba.rate if l.ba and l.ba.rate else 0))
                           for l in s.links)
        for f in result["flows"]:
            assert 0 <= f["goodput_bps"] <= capacity * 1.01, (f["name"], f["goodput_bps"], capacity)
            loss = f.get("loss_rate")
            assert loss is None or loss != loss or 0 <= loss <= 1, (f["name"], loss)

    def one(self, kind: str, payload: object, check) -> None:
        self.tried += 1
        try:
            outcome = check()
        except Exception:  # noqa: BLE001 - anything but a clean error is what we look for
            self.finding(kind, payload)
            return
        self.keep(kind, payload, outcome)
        self.accepted += outcome.startswith("ok")
        if self.simulate and outcome == "ok" and kind in ("document", "set+grid"):
            data, set_ = (payload, []) if kind == "document" else (payload["data"], payload["set"])
            try:
                self.sane_run(data, set_)
            except Exception:  # noqa: BLE001
                self.finding(f"{kind}-run", payload)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parent / "fuzz-corpus.jsonl.gz")
    ap.add_argument("--seed", type=int, default=None, help="Base seed (default: the time).")
    ap.add_argument("--no-sim", action="store_true", help="Only validate and resolve; do not simulate.")
    args = ap.parse_args()
    fz = Fuzzer(args.corpus, simulate=not args.no_sim)
    deadline = time.monotonic() + 60 * args.minutes
    base_seed = args.seed if args.seed is not None else int(time.time())
    print(f"seed {base_seed} (--seed {base_seed} repeats this run)")
    batch = settings(max_examples=200, deadline=None, database=None, derandomize=False,
                     suppress_health_check=list(HealthCheck))

    def documents(doc):
        name, data = doc
        fz.one("document", data, lambda: mutations.check_scenario_input(data))

    def tweaks(doc):
        name, data = doc
        fz.one("document", data, lambda: mutations.check_scenario_input(data))

    def texts(doc):
        name, text = doc
        fz.one("text", text, lambda: mutations.check_scenario_input(text=text, tmp=fz.tmp))

    def set_grid(doc, set_, grid):
        name, data = doc
        fz.one("set+grid", {"data": data, "set": set_, "grid": grid},
               lambda: mutations.check_scenario_input(data, set_=set_, grid=grid))

    def api(calls):
        fz.one("api", calls, lambda: mutations.check_api_calls(calls))

    targets = [
        batch(given(mutations.mutated_document())(documents)),
        batch(given(mutations.tweaked_document())(tweaks)),
        batch(given(mutations.mutated_text())(texts)),
        batch(given(mutations.mutated_document(), mutations.overrides(), mutations.axes())(set_grid)),
        batch(given(mutations.api_calls())(api)),
    ]
    started = time.monotonic()
    round_ = 0
    while time.monotonic() < deadline:
        for target in targets:
            seed(base_seed + round_)(target)()
            round_ += 1
            if time.monotonic() >= deadline:
                break
        elapsed = time.monotonic() - started
        print(f"{elapsed / 60:5.1f} min: {fz.tried} inputs tried, {fz.accepted} accepted, {fz.simulated} simulated, "
              f"{len(fz.seen)} distinct outcomes, {fz.findings} findings", flush=True)
    if args.corpus.exists():
        compact_corpus(args.corpus)
    print(f"done: {fz.tried} inputs tried in {(time.monotonic() - started) / 60:.1f} min, {fz.accepted} accepted, "
          f"{fz.simulated} simulated, "
          f"{len(fz.seen)} distinct outcomes kept in {args.corpus}, {fz.findings} findings")
    sys.exit(1 if fz.findings else 0)


if __name__ == "__main__":
    main()
