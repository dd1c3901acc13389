"""Reproductions of the seed papers: `netbraid paper NNN`."""

from . import p000, p001, p002, p003

PAPERS = {"000": p000, "001": p001, "002": p002, "003": p003}
