"""Reproductions of the seed papers: `netbraid paper NNN`."""

from . import p003

PAPERS = {"003": p003}
