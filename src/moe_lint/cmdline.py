"""Where each file and override sits on the command line (no printing, no parsing).

argparse's ``parse_intermixed_args`` accepts files, overrides and options in any order but
forgets positions, and a finding about an override names its argument (``command line
argument 3``). This walks the words the way argparse does: an option that takes a value eats
the next word (unless written ``--opt=value``), short flags cluster (``-qo FILE``), long
options may be abbreviated, and ``--`` ends the options.
"""

from __future__ import annotations

import argparse


def positional_indices(
    parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[list[int], int | None]:
    """Indices in ``argv`` of the words argparse treats as positional (files, overrides), so a
    finding can name its argument, and the index of the ``--`` that ends the options."""
    actions = parser._option_string_actions  # the option table argparse itself consults
    longs = [o for o in actions if o.startswith("--")]

    def takes_value(option: str) -> bool:
        action = actions.get(option)
        if action is None and option.startswith("--"):
            matches = [o for o in longs if o.startswith(option)]  # argparse's abbreviations
            action = actions[matches[0]] if len(matches) == 1 else None
        return action is not None and action.nargs != 0

    out: list[int] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return out + list(range(i + 1, len(argv))), i
        if token.startswith("--"):
            if "=" not in token and takes_value(token):
                i += 1
        elif token.startswith("-") and len(token) > 1:
            for pos in range(1, len(token)):  # a cluster such as -qo FILE
                if takes_value("-" + token[pos]):
                    if pos == len(token) - 1:
                        i += 1
                    break
        else:
            out.append(i)
        i += 1
    return out, None
