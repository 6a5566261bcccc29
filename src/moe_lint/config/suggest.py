"""'Did you mean' for names: the known name closest to a misspelt one.

Used for unknown config keys, override keys, recompute labels, suppression codes and the
command line's flags, choices, GPU names, model presets and rule selectors, so every
suggestion moe-lint makes follows one rule: a case-insensitive exact match first, else
difflib's closest match at a 0.75 ratio or better.
"""

from __future__ import annotations


def closest(word: str, candidates: list[str]) -> str | None:
    """The candidate ``word`` most likely meant, or None when nothing is close."""
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered:
        return lowered[word.lower()]
    # Lazy: difflib (~3 ms with heapq) only when a name is not known, not on every start.
    import difflib

    match = difflib.get_close_matches(word, candidates, n=1, cutoff=0.75)
    return match[0] if match else None


def did_you_mean(word: str, candidates: list[str]) -> str:
    """``; did you mean 'x'?`` for the end of a usage error, or nothing when no name is close."""
    guess = closest(word, candidates)
    return f"; did you mean {guess!r}?" if guess is not None and guess != word else ""


#: Where a key that several sections have most likely belongs, first to last.
HOME_SECTIONS = {"model": 0, "train": 1, "optimizer": 2, "ddp": 3, "dist": 4, "dataset": 5}


def home_order(section: str) -> tuple[bool, int, str]:
    """Sort key putting the sections a user most likely means first (model, train, ...)."""
    return (section not in HOME_SECTIONS, HOME_SECTIONS.get(section, 0), section)
