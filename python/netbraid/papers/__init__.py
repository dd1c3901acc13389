"""Reproductions of the seed papers: `netbraid paper NNN`."""

from . import p001, p003

PAPERS = {"001": p001, "003": p003}
