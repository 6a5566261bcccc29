"""Hostile Megatron-LM input (issue 22): launch scripts and ``MODEL_ARGS:`` files that made the
shell reader (config/shell.py) or the MODEL_ARGS reader (config/model_args.py, mlm_args.py)
run for seconds or take gigabytes. Each now reads in time proportional to its size or is
refused with one line naming a bound: exit 0, 1 or 2, at most one stderr line, no traceback,
< 2 s CPU and < 300 MB peak RSS, measured per process by test_hostile.run_cli.

Before the fix: a 7 MB MODEL_ARGS value ran 30 s into the per-file timeout (shlex's
character loop, and a list of ints a character: 440 MB); word splitting ``B=($A)`` of a
50,000-word value 200 times took 1.2 GB and 30 s (not charged to the expansion budget);
3,000 nested ``${A:-`` defaults took 2.6 s (each level copied and re-scanned its body);
aliases of a 100 KB string in MODEL_ARGS or ENV_VARS were copied at each use uncharged.

Shell scripts here are kept near 1 MB: bridge_launch's marker search, which every script
passes first, costs about 0.2 s a MB on its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_hostile import MAX_RSS_MB, MAX_SECONDS, run_cli

#: Each case runs the CLI in a process of its own to bound its CPU time and memory: slow.
pytestmark = pytest.mark.slow

SH = "#!/bin/bash\n"
RUN = "torchrun pretrain_gpt.py --num-layers 2\n"


def _cases() -> dict[str, tuple[str, str | None]]:
    """name -> (file text, what its one error line says when it is refused, or None)."""
    return {
        "big-value.yaml": ("MODEL_ARGS:\n  --x-y: " + "a" * 7_000_000 + "\n", None),
        "bracket-list.yaml": (
            "MODEL_ARGS:\n  --x-y: '[" + "ab " * 2_500_000 + "]'\n",
            "bounds.MAX_EXPANDED",
        ),
        "quotes.yaml": ('MODEL_ARGS:\n  --x-y: "' + "'a' " * 2_000_000 + '"\n', None),
        "alias-args.yaml": (
            "X: &a '"
            + "a" * 100_000
            + "'\nMODEL_ARGS:\n"
            + "".join(f"  --f{i}: *a\n" for i in range(9000)),
            "bounds.MAX_EXPANDED",
        ),
        "alias-env.yaml": (
            "X: &a '"
            + "a" * 100_000
            + "'\nENV_VARS:\n"
            + "".join(f"  V{i}: *a\n" for i in range(9000))
            + "MODEL_ARGS:\n  --num-layers: 2\n",
            "bounds.MAX_EXPANDED",
        ),
        "alias-list.yaml": (
            "X: &a '["
            + "1 " * 50_000
            + "]'\nMODEL_ARGS:\n"
            + "".join(f"  --f{i}: *a\n" for i in range(5000)),
            "arguments",
        ),
        "flags-300k.yaml": (
            "MODEL_ARGS: {" + ", ".join(f"--f{i}: 1" for i in range(300_000)) + "}\n",
            "bounds.MAX_NODES",
        ),
        "nargs.yaml": ("MODEL_ARGS:\n  --moe-layer-freq: '[" + "1 " * 19_000 + "]'\n", None),
        "split.sh": (
            SH + "A='" + "x " * 50_000 + "'\n" + "".join(f"B{i}=($A)\n" for i in range(200)) + RUN,
            "bounds.MAX_EXPANDED",
        ),
        "array-copy.sh": (
            SH
            + "A=("
            + "x " * 20_000
            + ")\n"
            + "".join(f'B{i}=("${{A[@]}}")\n' for i in range(1000))
            + RUN,
            "bounds.MAX_EXPANDED",
        ),
        "nest.sh": (
            SH
            + "X="
            + "${A:-" * 3000
            + "1"
            + "}" * 3000
            + "\ntorchrun pretrain_gpt.py --num-layers $X\n",
            "nesting",
        ),
        "nest-wide.sh": (
            SH + "X=" + "${A:-" * 150 + "1" * 1_000_000 + "}" * 150 + "\n" + RUN,
            None,
        ),
        "long-default.sh": (SH + "X=${A:-" + "ab" * 500_000 + "}\n" + RUN, None),
        "dense.sh": (SH + "a=1;" * 250_000 + "\n" + RUN, "bounds.MAX_SHELL_STEPS"),
        "words.sh": (
            SH + "torchrun pretrain_gpt.py " + "a " * 500_000 + "\n",
            "bounds.MAX_SHELL_STEPS",
        ),
        "redirects.sh": (SH + "echo a " + ">&2 " * 250_000 + "\n" + RUN, "MAX_SHELL_STEPS"),
        "case-pattern.sh": (SH + "case x in " + "a*" * 500_000 + ") X=1;; esac\n" + RUN, None),
        "substitutions.sh": (SH + "X=" + "$(" * 100_000 + ")" * 100_000 + "\n" + RUN, None),
        "heredoc.sh": (
            SH + "read -r -d '' X <<'EOF'\n" + "line of text\n" * 90_000 + "EOF\n" + RUN,
            None,
        ),
        # Found by bench/fuzz.py --target scripts (seeds 11 and 21): a 100 KB word ending in
        # .py (run-mode and classifying searches, 10-31 s) and a 4 MB Bridge command word
        # (a list of its indexes per span: 474 MB).
        "long-py-word.sh": (SH + "X=" + "y" * 100_000 + ".py\n" + RUN, None),
        "bridge-long-script-word.sh": (
            SH + "python examples/" + "y" * 100_000 + "generate.py --recipe x\n",
            None,
        ),
        "bridge-long-override.sh": (
            SH + "R=${REX=" + "y" * 1_000_000 + "\ntorchrun scripts/training/run_recipe.py "
            "--recipe qwen3_30b_a3b_pretrain_config $R}\n",
            None,
        ),
        # Seed 53 case 2051: a 4 MB backtick value (unknown characters) split as an
        # unquoted word; the run-finding regex kept a mark per repeated item (423 MB).
        "unknown-word-split.sh": (
            SH + "D=`date +'" + ("y" * 100_000 + "\n") * 40 + "'`\nsrun -l --output=x_$D.log"
            ' sh -c "python pretrain_gpt.py"\n',
            None,
        ),
        "growing.sh": (
            SH + "A=" + "x" * 100_000 + "\n" + 'A="$A $A"\n' * 200 + RUN,
            "bounds.MAX_BYTES",
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_megatron_lm_input_is_read_or_refused_in_bounds(tmp_path: Path, name: str) -> None:
    text, refusal = CASES[name]
    (tmp_path / name).write_text(text)
    code, _, err, cpu, rss = run_cli([name], tmp_path)
    lines = err.splitlines()
    assert code in (0, 1, 2), (code, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    assert len(lines) <= 1, lines[:3]
    if refusal is not None:
        assert code == 2 and refusal in err, (code, err[:500])
    assert cpu < MAX_SECONDS, f"{name}: {cpu:.2f} s CPU"
    assert rss < MAX_RSS_MB, f"{name}: {rss:.0f} MB"
