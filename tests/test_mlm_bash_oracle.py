"""Bash as the oracle of moe-lint's shell reader (config/mlm_args.py::ShellReader).

Each of Megatron-LM's example launch scripts (tests/data/megatron-lm/examples/, copied from
Megatron-LM, see SOURCE.md there) is run by bash in a sandbox: a temporary directory as cwd and
HOME, an empty environment (``env -i``), no arguments, stdin from /dev/null, and a PATH holding
only shims. The launchers (torchrun, python, srun, uv, ...) write their argv, NUL-separated, to a
file and exit 0; every other external command is a no-op (bash's ``command_not_found_handle``
returns 0, and nothing else is on PATH: no network, no writes outside the temporary directory).

moe-lint's reading of the same script must agree with what bash passes: the training command
moe-lint finds is matched word for word against the launcher call bash made. A word moe-lint
reads as resolved must be exactly bash's word; a word it calls unresolved (``$1``, ``$(...)``,
a variable the branches set differently, a file it does not read) stands for any number of
bash's words, so it can hide flags but never change one. Where the script has no training
command (a "conf" file), each variable moe-lint takes flags from is compared with the words of
``${VAR[@]}`` at the end of the bash run.

A script bash cannot bring to its training command is listed in EXPECTED with the reason;
nothing is skipped silently. ``python tests/test_mlm_bash_oracle.py`` prints the mismatches.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "megatron-lm" / "examples"
SCRIPTS = sorted(DATA.rglob("*.sh"))
BASH = shutil.which("bash")
#: Programs whose argv is recorded (a training command starts with one of them).
LAUNCHERS = ("torchrun", "python", "python3", "srun", "deepspeed", "uv", "accelerate",
             "debugpy-run", "ft_launcher", "nsys", "mpirun", "sh", "bash")  # fmt: skip
TIMEOUT_S = 5

#: What a script needs before bash reaches its training command (the reason, then arguments,
#: environment variables and directories to create in the sandbox). moe-lint reads the script
#: without them: a script argument or an environment variable is unknown to it, so its
#: resolved words must be bash's whatever they are.
SETUP: dict[str, tuple[str, list[str], dict[str, str], list[str]]] = {
    "gptoss/02_train.sh": (
        "exits unless --checkpoint-path names an existing directory",
        ["--checkpoint-path", "ckpt"], {}, ["ckpt"],
    ),
    "multimodal/pretrain_mistral_clip.sh": (
        "exits unless WORKSPACE and LOAD_NAME are set", [], {"WORKSPACE": "ws",
                                                            "LOAD_NAME": "base"}, [],
    ),
    "multimodal/sft_mistral_clip.sh": (
        "exits unless WORKSPACE, LOAD_NAME and LOAD_ITER are set", [],
        {"WORKSPACE": "ws", "LOAD_NAME": "base", "LOAD_ITER": "1000"}, [],
    ),
    **{
        f"post_training/modelopt/{name}.sh": (
            "exits unless MLM_MODEL_CKPT is set", [], {"MLM_MODEL_CKPT": "ckpt"}, [],
        )
        for name in ("generate", "generation_server", "validate")
    },
    "post_training/modelopt/prune.sh": (
        "runs `set -e` and then ${LAUNCH_SCRIPT} (set by conf/arguments.sh, not in the sandbox)",
        [], {"LAUNCH_SCRIPT": "python"}, [],
    ),
}  # fmt: skip

#: Scripts bash does not bring to a training command in the sandbox, with the reason.
_PLACEHOLDERS = "a placeholder such as <PATH_OF_...> is a bash syntax error: it never runs"
EXPECTED: dict[str, str] = {
    "academic_paper_scripts/msdp/eval_knwl_generation.sh": _PLACEHOLDERS,
    "academic_paper_scripts/msdp/eval_resp_generation.sh": _PLACEHOLDERS,
    "academic_paper_scripts/msdp/prompt_knwl_gen.sh": _PLACEHOLDERS,
    "academic_paper_scripts/msdp/prompt_resp_gen.sh": _PLACEHOLDERS,
    "academic_paper_scripts/sc21/CONFIG.sh": _PLACEHOLDERS,
}

#: A training entry point in a launcher's argv (independent of moe-lint's own test).
_ENTRY = re.compile(r"(^|/)(pretrain_\w*|train\w*|finetune\w*|run_\w+)\.py$")


def _shim(bash: str, calls: Path) -> str:
    return f'#!{bash}\nprintf "%s\\0" "${{0##*/}}" "$@" > "{calls}/call.$$.$RANDOM"\nexit 0\n'


def run_bash(script: Path, workdir: Path, dump: list[str], entry: str | None = None
             ) -> tuple[list[list[str]], dict[str, list[str]], int]:  # fmt: skip
    """Run a copy of ``script`` in the sandbox: the launcher calls bash made (argv lists), the
    words of each variable in ``dump`` when bash exits (``${VAR[@]}`` unquoted), bash's
    status. ``entry``: a relative script path to create (the scripts check it exists)."""
    assert BASH is not None
    shims, calls, home = workdir / "shims", workdir / "calls", workdir / "home"
    for d in (shims, calls, home):
        d.mkdir()
    for name in LAUNCHERS:
        path = shims / name
        path.write_text(_shim(BASH, calls), encoding="utf-8")
        path.chmod(0o755)
    relative = str(script.relative_to(DATA))
    _, args, extra_env, dirs = SETUP.get(relative, ("", [], {}, []))
    for d in dirs:
        (home / d).mkdir(parents=True, exist_ok=True)
    if entry and not entry.startswith("/") and ".." not in entry:
        (home / entry).parent.mkdir(parents=True, exist_ok=True)
        (home / entry).write_text("", encoding="utf-8")
    text = script.read_text(encoding="utf-8")
    if dump:  # at exit (a script may end with `exit 0`), with bash's own status
        body = "; ".join(f'printf "%s\\0" ${{{name}[@]}} > "{calls}/dump.{k}"'
                         for k, name in enumerate(dump))  # fmt: skip
        status = f'[ -n "$__oracle_end" ] && __s=0; printf "%s" "$__s" > "{calls}/status"'
        trap = f"__oracle_dump() {{ __s=$?; set -f; {body}; {status}; }}\ntrap __oracle_dump EXIT\n"
        first, _, rest = text.partition("\n")
        text = (first + "\n" + trap + rest) if first.startswith("#!") else trap + text
        text = text.rstrip("\n") + "\n__oracle_end=1\n"  # the end reached: status 0
    copy = home / script.name
    copy.write_text(text, encoding="utf-8")
    env = {
        "HOME": str(home),
        "PATH": str(shims),
        # every command that is not a launcher shim succeeds and does nothing; `which` finds
        # nothing (no SLURM here: the scripts take their interactive branches)
        "BASH_FUNC_command_not_found_handle%%": '() { [ "$1" != which ]; }',
        **extra_env,
    }
    proc = subprocess.Popen(
        ["env", "-i", *(f"{k}={v}" for k, v in env.items()), BASH, str(copy), *args],
        cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        status = proc.wait(TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        status = -1
    records = []
    dumps: dict[str, list[str]] = {}
    for path in sorted(calls.iterdir()):
        if path.name == "status":
            status = int(path.read_text() or "0")
            continue
        words = path.read_bytes().decode("utf-8", "replace").split("\0")[:-1]
        if path.name.startswith("dump."):
            dumps[dump[int(path.name.split(".")[1])]] = words
        else:
            records.append(words)
    return records, dumps, status


def _wild(word: Any) -> bool:
    return bool(word.unresolved)


def align(mine: list[Any], bash: list[str]) -> bool:
    """Do moe-lint's words match bash's? A resolved word is one word equal to bash's; an
    unresolved one stands for any number of bash's words (it may hide words, never change one)."""
    n, m = len(mine), len(bash)
    # reach[j]: moe-lint's first i words can produce bash's first j words.
    reach = [False] * (m + 1)
    reach[0] = True
    for i in range(n):
        word = mine[i]
        nxt = [False] * (m + 1)
        if _wild(word):
            seen = False
            for j in range(m + 1):
                seen = seen or reach[j]
                nxt[j] = seen
        else:
            for j in range(m):
                if reach[j] and bash[j] == word.text:
                    nxt[j + 1] = True
        reach = nxt
    return reach[m]


def moe_lint_reading(text: str) -> tuple[str, Any]:
    """("command", the Launch) or ("vars", name -> words) or ("none", None): what moe-lint
    reads from the script."""
    from moe_lint.config import mlm_args

    mlm_args.reset_budget()
    reader = mlm_args.ShellReader(text)
    reader.run()
    launch = mlm_args.find_launch(reader)
    if launch is not None:
        return "command", launch
    found = mlm_args._flag_vars_named(reader)
    return ("vars", found) if found else ("none", None)


def _bash_entry(record: list[str], entry: str) -> int | None:
    """Where the entry point moe-lint found sits in bash's argv (None: not there)."""
    for k, word in enumerate(record):
        if word == entry and (not _ENTRY.search(word) or k == 0 or record[k - 1] != "-m"):
            return k
    return None


def check(script: Path, kind: str, reading: Any) -> str | None:
    """None when moe-lint's reading (:func:`moe_lint_reading`) agrees with bash's, else what
    differs."""
    from moe_lint.config import mlm_args

    entry = None
    if kind == "command" and reading.script is not None and not reading.script.unresolved:
        entry = reading.script.text
    with tempfile.TemporaryDirectory(prefix="mlm-oracle-") as tmp:
        dump = sorted(reading) if kind == "vars" else []
        records, dumps, status = run_bash(script, Path(tmp), dump, entry)
    if status == -1:
        return "bash timed out"
    if kind == "none":
        missed = [r for r in records if any(_ENTRY.search(w) for w in r[1:])]
        return f"moe-lint finds no command; bash ran {missed[0][:4]}" if missed else None
    if kind == "vars":
        for name, words in reading.items():
            if name not in dumps or status != 0:
                return f"bash exited with status {status} before the end"
            if not align(words, dumps[name]):
                return f"${name}: " + _diff(words, dumps[name])
        return None
    launch = reading
    if entry is None:
        return "moe-lint's entry point is unresolved"
    calls = [(r, k) for r in records if (k := _bash_entry(r, entry)) is not None]
    if not calls:
        return f"bash made no launcher call running {entry} (status {status})"
    mine = [launch.script, *launch.args]
    world = mlm_args._launcher_world(launch.launcher)
    problems = []
    for record, k in calls:
        if not align(mine, record[k:]):
            problems.append(_diff(mine, record[k:]))
            continue
        theirs = mlm_args._launcher_world([mlm_args._PStr(w) for w in record[1:k]])
        if world and world != theirs:
            problems.append(f"world: moe-lint {world} bash {theirs}")
            continue
        return None
    return problems[0]


def _diff(mine: list[Any], bash: list[str]) -> str:
    """Where the words part: the longest start of moe-lint's words bash's can match."""
    best = 0
    for i in range(len(mine), 0, -1):
        if any(align(mine[:i], bash[:j]) for j in range(len(bash) + 1)):
            best = i
            break
    shown = [("?" + w.text) if w.unresolved else w.text for w in mine[best : best + 4]]
    return f"after word {best}: moe-lint {shown} bash has {[w for w in bash if True][:0]}" + \
        f"{bash[max(0, best - 1) : best + 5]}"  # fmt: skip


def survey() -> dict[str, str]:
    """Script (relative path) -> mismatch, for every example script."""
    from concurrent.futures import ThreadPoolExecutor

    readings = [moe_lint_reading(s.read_text(encoding="utf-8")) for s in SCRIPTS]
    with ThreadPoolExecutor(max_workers=4) as pool:  # bash runs in its own processes
        problems = list(
            pool.map(lambda a: check(*a), [(s, *r) for s, r in zip(SCRIPTS, readings, strict=True)])
        )
    return {str(s.relative_to(DATA)): p for s, p in zip(SCRIPTS, problems, strict=True) if p}


pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


@pytest.mark.slow
def test_every_example_script_reads_as_bash_runs_it() -> None:
    found = survey()
    unexpected = {k: v for k, v in found.items() if k not in EXPECTED}
    stale = sorted(k for k in EXPECTED if k not in found)
    assert not unexpected, "\n".join(f"{k}: {v}" for k, v in sorted(unexpected.items()))
    assert not stale, f"expected mismatches that are gone: {stale}"


if __name__ == "__main__":
    result = survey()
    for name, problem in sorted(result.items()):
        mark = "expected" if name in EXPECTED else "MISMATCH"
        print(f"{mark} {name}: {problem}")
    bad = sum(1 for k in result if k not in EXPECTED)
    print(f"{bad} mismatches, {len(result) - bad} expected, {len(SCRIPTS)} scripts")
    sys.exit(0)
