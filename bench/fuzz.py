"""Long fuzz run: real configs mutated byte-wise and type-wise, linted through the Python API.

``tests/test_fuzz.py`` checks properties of *well-formed* generated configs and line-level
mutations with hypothesis; this script is the blunt, fast complement the issue asked for
("a fuzz target that mutates real configs byte-wise and type-wise through the Python API, run
long in a benchmark-style script"). It is a script, not a test: a long run takes minutes and
its rate depends on the machine. ``tests/test_fuzz_script.py`` runs a few hundred cases of it
so the script itself cannot rot.

Every case starts from a real file (``examples/*.yaml`` and ``tests/data/corpus/**/*.yaml``)
and applies 1-4 mutations:

- byte-wise: flip a byte, insert random or YAML-significant bytes (``*&!%|>:{}[],#'"``, tab,
  CR, NUL, a BOM, invalid UTF-8), delete, duplicate or swap a range, truncate;
- type-wise (on the YAML tree, then dumped back): replace a scalar with a value of another
  kind (huge or negative integers, 5,000-digit integers, floats, inf, NaN, strings, long
  strings, lists, mappings, null, booleans, sexagesimal ``1:0:0``, YAML 1.1 octal/hex forms),
  add an anchor/alias pair, add a suppression or directive comment, wrap in ``ConfigContainer:``.

Each case goes through ``moe_lint.linting.lint_text`` (and, for one case in ``--fix-every``,
through ``moe_lint.output.fix.run_fixes``). A case fails when:

- anything but ``UsageError`` naming the file escapes (a crash);
- an input error is empty or longer than one line;
- a finding's ``to_json()`` does not match ``docs/findings.schema.json``;
- the last mutation put a non-integer (a word, a list, a mapping, 1.5, a 100,000-character
  string) into a typed integer field of a config and no SCH002 names that path ("silent");
- linting the same text twice gives different results;
- the case takes more than ``--case-seconds`` of CPU time (default 2 s; a busy hang is cut by a
  CPU timer at 5× that, and a blocking one by a wall-clock timer at 30×, so a loaded machine
  does not read as a hang) or the process's peak RSS grows past ``--max-rss-mb`` (default 300);
- a fixed text does not load again, or re-linting it raises.

``--target settings`` fuzzes what else a repository controls (issue 22): a ``[tool.moe-lint]``
table, grown from the README's example and mutated value-wise (odd numbers, NaN, long or
line-breaking strings, hostile globs such as ``*a*a*a*a*a*b``, ``[z-a]``, repeated ``**/``,
``~nobody`` model paths, 3,000-item lists, deep nesting, unknown keys, wrong shapes) and
byte-wise, written as a pyproject.toml and read with ``load_pyproject``; then its selectors are
checked, a config is linted under it with a long and deep file name, and its exclude patterns
are tried on long names. ``--target packs`` does the same for a rule pack: 1-5 rules of the
shipped packs, renamed, mutated field-wise (hostile expressions and templates, odd values,
huge lets, deep nesting, aliases) and byte-wise, loaded with ``load_catalogue(extra_packs=...)``
and run on a config. A settings or pack case fails when anything but a ``moe_lint.Error``
escapes, when an error message is empty, longer than one line or than
``bounds.MAX_MESSAGE_CHARS``, or on the time and memory limits above. ``--target scripts``,
``model-args`` and ``plan`` mutate launch scripts, functional tests' MODEL_ARGS files and
``moe-lint plan`` command lines (bench/fuzz_inputs.py says how). ``--target all`` mixes the
six kinds.

``--hf`` fuzzes the other input an attacker's pull request controls: the HF ``config.json`` read
as the model (config/hf_config.py). Each case starts from a real one (``tests/data/hf-configs``)
and applies 1-4 mutations: a value replaced (counts around every bound, 1e300, inf, NaN, huge
integers, strings, lists, objects, per-layer lists and patterns of 20,000 layers), a name a
mapper reads set or added, a key deleted, another family's architecture, a nested leaf
replaced, raw JSON no dumper writes (5,000-digit and ``1e4000`` literals, 70-, 900- and
5,000-deep nesting, 300,000 values, a lone surrogate, Infinity), or the byte mutations above.
The mutated file is the model of ``moe-lint models PATH``, ``check --model PATH``, ``check``
with the file beside the linted YAML, ``estimate --model PATH`` and the planner's model loading
(``plan.run.build``; the whole ``moe-lint plan`` on 1 case in ``--plan-every``), each run as the
CLI runs it, in this process. A case fails when a command exits 3 (or anything but 0/1/2), an
exit-2 message is not one line, a command takes more than ``--case-seconds`` of CPU, the
commands disagree (``models`` refuses a config another command accepts, or the reverse), or a
non-integer in hidden_size, num_attention_heads or vocab_size is accepted ("silent")::

    python bench/fuzz.py --hf --cases 8000 --seed 1

Failing inputs are written to ``--save DIR`` (default a temp dir) as ``case-N.yaml`` (or
``.toml``; with ``--hf``, ``.json``) with a ``.txt`` next to it naming the failure. The report
(stdout) gives cases, cases/s, failures by kind and the seed, so a run can be repeated exactly::


    python bench/fuzz.py --seconds 600              # ten minutes
    python bench/fuzz.py --cases 20000 --seed 7
    python bench/fuzz.py --target settings --cases 8000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fuzz_inputs import (
    check_plan_case,
    check_text_case,
    error_problem,
    make_plan_case,
    model_args_seeds,
    mutate_model_args,
    mutate_script,
    script_seeds,
)

REPO = Path(__file__).resolve().parent.parent
SPECIAL = [
    b"*", b"&", b"!", b"!!", b"%", b"|", b">", b":", b": ", b"{", b"}", b"[", b"]", b",", b"#",
    b"'", b'"', b"\t", b"\r", b"\r\n", b"\n", b"\x00", b"\xef\xbb\xbf", b"\xff", b"\xc3",
    b"<<: ", b"- ", b"---\n", b"...\n", b"~", b"\x1b[31m", b"\\",
]  # fmt: skip
ODD_VALUES: list[Any] = [
    0, -1, -(2**31), 2**63, 10**30, 1.5, float("inf"), float("nan"), -0.0,
    "", "x" * 100_000, "eight", "2001-12-14", "null", "~",
    None, True, False, [], [1, 2, 3], {}, {"a": {"b": 1}}, [[[[1]]]], "\x1b]0;t\x07", "a\nb",
]  # fmt: skip
#: Plain YAML forms a dumper would quote: written as a marker, replaced in the dumped text.
RAW_FORMS = [
    "9" * 5000, "1:0:0", "190:20:30", "1" + ":0" * 20_000, "0o777", "0x1F", "0b101", "1_000",
    "-.inf", ".NaN", "!!binary aGk=", "!!timestamp 2001-13-45", "*undefined", "!!int x",
    "!!python/name:os.system", "&a 8", "{? [a]: 1}", "!!set {a, b}",
]  # fmt: skip


class Hang(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang


def seeds() -> list[tuple[str, str]]:
    files = sorted(REPO.glob("examples/*.yaml")) + sorted(REPO.glob("tests/data/corpus/**/*.yaml"))
    return [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in files]


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return rng.choice(SPECIAL)
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 200))
    kind = rng.randrange(7)
    if kind == 0:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]
    if kind == 1:
        return data[:i] + rng.choice(SPECIAL) + data[i:]
    if kind == 2:
        return data[:i] + data[j:]
    if kind == 3:
        return data[:j] + data[i:j] * rng.randint(1, 50) + data[j:]
    if kind == 4:
        k = rng.randrange(len(data))
        a, b = sorted((i, k))
        return data[:a] + data[j : j + (b - a)] + data[a + (b - a) :] if b > a else data
    if kind == 5:
        return data[:i]
    return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) + data[i:]


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _leaves(value, (*path, key)) or [(*path, key)]
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _leaves(value, (*path, index)) or [(*path, index)]
    return out


#: Values no integer field accepts: a case that puts one in a typed ``int`` field must get
#: SCH002 at that path (or an input error), never silence.
NOT_INTS: list[Any] = ["eight", [1, 2, 3], {"a": {"b": 1}}, 1.5, "x" * 100_000]


def int_fields() -> set[tuple[str, str]]:
    """(section, field) of every typed field whose type is exactly ``int`` or ``int | None``."""
    from moe_lint.config.schema import SECTIONS

    out = set()
    for section, model in SECTIONS.items():
        for name, info in model.model_fields.items():
            if info.annotation in (int, int | None):
                out.add((section, name))
    return out


INT_FIELDS: set[tuple[str, str]] = set()


def mutate_tree(text: str, rng: random.Random, expect: list[str] | None = None) -> str:
    """``text`` with its YAML tree changed; when the change puts a non-integer into a typed
    integer field, its dotted path is appended to ``expect``."""
    import yaml

    if len(text) > 500_000 or ":0:0:0:0" in text:  # PyYAML's own base-60 reader is quadratic
        return text
    try:
        data = yaml.safe_load(text)
    except Exception:  # any text PyYAML cannot turn into data is left to the byte mutators
        return text
    if not isinstance(data, dict):
        return text
    kind = rng.randrange(6)
    leaves = _leaves(data)
    typed = [(sec, key) for sec, key in INT_FIELDS if isinstance(data.get(sec), dict)]
    if kind == 5 and typed and expect is not None:
        section, key = rng.choice(sorted(typed))
        data[section][key] = rng.choice(NOT_INTS)
        expect.append(f"{section}.{key}")
    elif kind <= 1 and leaves:
        *parent_path, last = rng.choice(leaves)
        parent = data
        for part in parent_path:
            parent = parent[part]
        parent[last] = rng.choice([*ODD_VALUES, *(f"@@RAW{i}@@" for i in range(len(RAW_FORMS)))])
    elif kind == 2 and leaves:  # the same odd value in many places: an anchor and aliases
        value = rng.choice([*ODD_VALUES[:-6], ["x" * 1000] * 10])
        for *parent_path, last in rng.sample(leaves, min(len(leaves), rng.randint(2, 50))):
            parent = data
            for part in parent_path:
                parent = parent[part]
            parent[last] = value
    elif kind == 3:
        data = {"ConfigContainer": data}
    try:
        out = yaml.safe_dump(data, sort_keys=False, allow_unicode=rng.random() < 0.5)
    except (yaml.YAMLError, RecursionError, ValueError):
        return text
    for i, form in enumerate(RAW_FORMS):
        out = out.replace(f"'@@RAW{i}@@'", form).replace(f"@@RAW{i}@@", form)
    if kind == 4:
        lines = out.splitlines(keepends=True)
        comment = rng.choice([
            "# moe-lint: disable=ALL\n", "# moe-lint: disable=PAR001 -- why\n",
            "# moe-lint: gpus=8 gpu=h100\n", "# moe-lint: gpus=0\n", "# moe-lint: disable=" +
            "," * 3000 + "\n", "# moe-lint: disable-next-line=XYZ999\n",
            "# moe-lint: " + "a=" * 5000 + "\n",
        ])  # fmt: skip
        lines.insert(rng.randrange(len(lines) + 1), comment)
        out = "".join(lines)
    return out


def make_case(rng: random.Random, corpus: list[tuple[str, str]]) -> tuple[str, bytes, str | None]:
    """A seed file's name, its bytes after 1-4 mutations, and the typed path that must be
    reported as a wrong type (when the last mutation put a non-integer into one)."""
    name, text = rng.choice(corpus)
    raw = text.encode("utf-8")
    expect: list[str] = []
    for _ in range(rng.randint(1, 4)):
        expect.clear()  # a later mutation may have moved or removed the value
        if rng.random() < 0.5:
            try:
                raw = mutate_tree(raw.decode("utf-8"), rng, expect).encode("utf-8", "surrogatepass")
            except UnicodeDecodeError:  # already not UTF-8: only bytes can change it further
                raw = mutate_bytes(raw, rng)
        else:
            raw = mutate_bytes(raw, rng)
    return name, raw, (expect[0] if expect else None)


def check_case(
    raw: bytes, catalogue: Any, validator: Any, fix: bool, expect: str | None = None
) -> str | None:
    """The failure of one case (the file's bytes, decoded as ``load_file`` does), or None."""
    from moe_lint.config.load import decode
    from moe_lint.errors import InputError, UsageError
    from moe_lint.linting import FileResult, lint_text

    try:
        text, _ = decode(raw, "fuzz.yaml")
    except InputError as exc:
        text, decode_error = "", str(exc)
    else:
        decode_error = None

    def once() -> Any:
        if decode_error is not None:
            return FileResult("fuzz.yaml", error=decode_error)
        try:
            return lint_text(text, catalogue, path="fuzz.yaml")
        except UsageError as exc:
            if "fuzz.yaml" not in str(exc):
                return f"usage error not naming the file: {exc}"
            return None

    first = once()
    if isinstance(first, str) or first is None:
        return first
    if first.error is not None:
        if not first.error.strip() or "\n" in first.error.strip():
            return f"input error not one line: {first.error[:200]!r}"
        return None
    records = [f.to_json() for f in first.findings]
    if (
        expect is not None
        and first.notice is None
        and not any(r["code"] == "SCH002" and r["path"] == expect for r in records)
    ):
        return f"silent: a non-integer in {expect} got no SCH002"
    errors = list(validator.iter_errors(records))
    if errors:
        return f"finding schema: {errors[0].message[:200]}"
    second = once()
    if not isinstance(second, FileResult) or [f.to_json() for f in second.findings] != records:
        return "nondeterministic findings"
    if fix and first.findings:
        from moe_lint.output.fix import run_fixes

        def relint(candidate: str) -> list[Any]:
            again = lint_text(candidate, catalogue, path="fuzz.yaml")
            if again.error is not None:
                raise InputError(again.error)
            return list(again.findings)

        try:
            outcome = run_fixes(text, relint, True, first.findings)
        except InputError as exc:
            return f"fix made the file unloadable: {exc}"
        if outcome.text != text and lint_text(outcome.text, catalogue).error is not None:
            return "fixed text does not load"
    return None


# --------------------------------------------------------------------------------------------
# HF config.json (--hf): the model as an attacker's pull request may ship it
# --------------------------------------------------------------------------------------------

HF_DIR = REPO / "tests" / "data" / "hf-configs"
#: The file linted against each mutated config.json (small: the memory model runs on it).
HF_YAML = (
    "model:\n  tensor_model_parallel_size: 1\n  seq_length: 4096\n"
    "train:\n  global_batch_size: 64\n  micro_batch_size: 1\n"
)
#: Names the mappers read (config/hf_config.py) besides Bridge's CONFIG_MAPPING rows: set,
#: replaced or added by the key mutator so every mapper's arithmetic and loops are reached.
HF_KEYS = [
    "first_k_dense_replace", "n_shared_experts", "norm_topk_prob", "full_attention_interval",
    "layer_types", "shared_expert_intermediate_size", "linear_conv_kernel_dim",
    "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads",
    "linear_num_value_heads", "sliding_window", "qk_head_dim", "index_head_dim", "index_n_heads",
    "index_topk", "index_topk_freq", "index_skip_topk_offset", "interleave_moe_layer_step",
    "intermediate_size_mlp", "attention_chunk_size", "hybrid_override_pattern",
    "layers_block_type", "mtp_hybrid_override_pattern", "mtp_layers_block_type", "conv_kernel",
    "attention_head_dim", "moe_latent_size", "mtp_use_repeated_layer", "rope_scaling",
    "rope_parameters", "text_config", "architectures", "model_type", "tie_word_embeddings",
]  # fmt: skip
#: Values for a count, a size or a per-layer list, around every bound moe-lint has.
HF_VALUES: list[Any] = [
    0, -1, 1, 2, 3, 7, 10_000, 10_001, 10**6, 10**8, 10**9, 2**31, 2**31 + 1, 2**63, 10**30,
    1.5, 4096.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e300, "4096", "eight", "",
    "x" * 100_000, True, False, None, [], {}, [1, 2, 3], {"a": {"b": 1}}, {"rope_theta": "x"},
    {"type": "yarn", "factor": float("inf")}, ["mamba"] * 20_000, ["full_attention"] * 49,
    ["linear_attention", "full_attention", "x"], "M" * 20_000, "ME*-" * 3_000, "MEX*",
    "M|E/*", ["DeepseekV3ForCausalLM"], ["NemotronHForCausalLM"], [None], [[]],
]  # fmt: skip
#: JSON text no json.dumps writes: a marker, replaced in the dumped text.
HF_RAW = [
    "9" * 5_000, "1e4000", "-1e4000", "1." + "0" * 100, "[" * 5_000 + "]" * 5_000,
    "[" * 70 + "]" * 70, "[" * 900 + "]" * 900, "[" + "{}," * 300_000 + "{}]",
    "[" + "0," * 250_000 + "0]", '"\ud800"', "Infinity", "NaN", "-Infinity",
]  # fmt: skip
#: Fields every mapper reads through Bridge's CONFIG_MAPPING into a validated model field: a
#: non-integer put into one must be refused naming it (the silent-acceptance oracle).
HF_ALWAYS_READ = {"hidden_size": "model.hidden_size", "num_attention_heads":
                  "model.num_attention_heads", "vocab_size": "model.vocab_size"}  # fmt: skip


def hf_seeds() -> list[tuple[str, str]]:
    files = sorted(HF_DIR.glob("*.json")) + sorted(HF_DIR.glob("bridge-tests/*.json"))
    return [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in files]


def _hf_archs() -> list[str]:
    from moe_lint.config.hf_config import ARCHITECTURES

    return sorted(ARCHITECTURES)


def mutate_hf(text: str, rng: random.Random, expect: list[str]) -> str:
    """``text`` (an HF config.json) with one change to its JSON tree, or to its bytes; when the
    change puts a non-integer into a field every mapper reads, that field goes to ``expect``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return mutate_bytes(text.encode("utf-8", "surrogatepass"), rng).decode("utf-8", "replace")
    if not isinstance(data, dict):
        return mutate_bytes(text.encode("utf-8", "surrogatepass"), rng).decode("utf-8", "replace")
    body = data
    if isinstance(data.get("text_config"), dict) and rng.random() < 0.8:
        body = data["text_config"]  # Llama-4 reads its text_config
    raw = f"@@RAW{rng.randrange(len(HF_RAW))}@@"
    kind = rng.randrange(8)
    if kind <= 1 and body:  # a value the config has, replaced
        key = rng.choice(sorted(body))
        body[key] = rng.choice([*HF_VALUES, *ODD_VALUES, raw])
        if key in HF_ALWAYS_READ and body is _hf_body(data) and _not_int(body[key]):
            expect.append(key)
    elif kind <= 3:  # a name a mapper reads, set (or added)
        key = rng.choice(HF_KEYS + sorted(HF_ALWAYS_READ) + ["num_hidden_layers"] * 3)
        body[key] = rng.choice([*HF_VALUES, raw])
        if key in HF_ALWAYS_READ and body is _hf_body(data) and _not_int(body[key]):
            expect.append(key)
    elif kind == 4 and body:
        body.pop(rng.choice(sorted(body)))
    elif kind == 5:  # another family's mapper on this family's fields
        data["architectures"] = [rng.choice(_hf_archs())]
    elif kind == 6:  # a nested value's leaf
        leaves = _leaves(data)
        if leaves:
            *parent_path, last = rng.choice(leaves)
            parent: Any = data
            for part in parent_path:
                parent = parent[part]
            parent[last] = rng.choice([*HF_VALUES[:30], raw])
    else:
        return mutate_bytes(text.encode("utf-8", "surrogatepass"), rng).decode("utf-8", "replace")
    out = json.dumps(data, indent=rng.choice([None, 2]))
    for i, form in enumerate(HF_RAW):
        out = out.replace(f'"@@RAW{i}@@"', form)
    return out


def _hf_body(data: dict[str, Any]) -> Any:
    """What the mapper reads: the ``text_config`` of an architecture whose model is there
    (hf_config._TEXT_CONFIG: Llama-4, Qwen3.5, Kimi-K2.5, Gemma-4), else the config itself."""
    from moe_lint.config.hf_config import _TEXT_CONFIG

    archs = data.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    if isinstance(arch, str) and arch in _TEXT_CONFIG and isinstance(data.get("text_config"), dict):
        return data["text_config"]
    return data


def _not_int(value: Any) -> bool:
    """A value no validated integer field accepts (pydantic's lax mode takes 4096.0 and
    "4096" as 4096, and a YAML file gets the same)."""
    if isinstance(value, bool) or value is None:
        return False  # true reads as 1 in lax mode; null leaves the field unset
    if isinstance(value, int):
        return value < 1
    if isinstance(value, float):
        return not value.is_integer() or value < 1
    if isinstance(value, str):
        return not value.strip().isdecimal() or int(value) < 1
    return True


def make_hf_case(
    rng: random.Random, corpus: list[tuple[str, str]]
) -> tuple[str, bytes, str | None]:
    """A seed config.json's name, its bytes after 1-4 mutations, and the field that must be
    refused (when the last mutation put a non-integer into one every mapper reads)."""
    name, text = rng.choice(corpus)
    expect: list[str] = []
    for _ in range(rng.randint(1, 4)):
        expect.clear()
        text = mutate_hf(text, rng, expect)
    return name, text.encode("utf-8", "surrogatepass"), (expect[0] if expect else None)


def _cli(args: list[str]) -> tuple[int, str, float]:
    """moe-lint's CLI in this process: (exit code, stderr, CPU seconds)."""
    import contextlib
    import io

    from moe_lint.cli import main

    out, err = io.StringIO(), io.StringIO()
    cpu0 = _cpu()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue(), _cpu() - cpu0


def _hf_fresh() -> None:
    """Forget the config.json caches (each case rewrites the same file)."""
    from moe_lint.config import hf_config

    hf_config._load.cache_clear()
    hf_config._looks_like_hf.cache_clear()


def check_hf_case(
    raw: bytes, folder: Path, case_seconds: float, full_plan: bool, expect: str | None = None
) -> str | None:
    """The failure of one mutated config.json, or None. ``models PATH``, ``check`` (with
    ``--model`` and beside the file), ``estimate`` and the planner's model loading each run as
    the CLI runs them: exit 0/1/2 only, an exit-2 message is one line, each command within
    ``case_seconds`` of CPU; a config ``models`` refuses is refused by every command with the
    same line, one it accepts is refused by none for the config's sake."""
    config = folder / "config.json"
    config.write_bytes(raw)
    yaml_path = folder / "x.yaml"
    _hf_fresh()
    cluster = ["--gpus", "8", "--gpu", "h100"]
    runs = {
        "models": ["models", str(config)],
        "check": ["check", str(yaml_path), "--model", str(config), *cluster, "--format", "json"],
        "beside": ["check", str(yaml_path), *cluster, "--format", "json"],
        "estimate": ["estimate", str(yaml_path), "--model", str(config), *cluster],
    }
    results: dict[str, tuple[int, str]] = {}
    for name, args in runs.items():
        code, err, spent = _cli(args)
        results[name] = (code, err)
        if code not in (0, 1, 2):
            return f"crash: {name} exit {code}: {err.strip()[-300:]}"
        lines = err.strip().splitlines()
        if code == 2 and len(lines) != 1:
            return f"input error not one line: {name}: {err[:300]!r}"
        if spent > case_seconds:
            return f"slow: {name} {spent:.2f} s CPU"
    refused = results["models"][0] == 2
    line = results["models"][1].strip()
    if expect is not None and not refused:  # refused for another problem first counts
        return f"silent: a non-integer in {expect} was accepted"
    if refused:
        message = line.split(": error: ", 1)[-1]
        for name in ("check", "estimate"):
            code, err = results[name]
            if code != 2 or message not in err:
                return f"inconsistent: models refuses, {name} exits {code}: {err.strip()[:200]!r}"
        if results["beside"][0] != 2 and _is_hf_object(raw):
            code, err = results["beside"]
            return f"inconsistent: models refuses, beside exits {code}: {err.strip()[:200]!r}"
    else:
        for name in ("check", "estimate", "beside"):
            code, err = results[name]
            if code == 2:
                return f"inconsistent: models accepts, {name} refuses: {err.strip()[:200]!r}"
    return _check_hf_plan(config, refused, line, case_seconds, full_plan)


def _is_hf_object(raw: bytes) -> bool:
    """Whether a config.json beside the file is one moe-lint must read (valid UTF-8 JSON naming
    an architecture or model type); any other is another tool's file, left alone."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False
    return isinstance(data, dict) and ("architectures" in data or "model_type" in data)


def _check_hf_plan(
    config: Path, refused: bool, line: str, case_seconds: float, full_plan: bool
) -> str | None:
    """The planner: its model loading (``plan.run.build``, what runs before any search) on
    every case; the whole ``moe-lint plan`` on 1 case in ``--plan-every`` (crash check only:
    a search over a model it accepts may take longer than a refusal)."""
    from moe_lint.config.forms import NotBridgeConfig
    from moe_lint.errors import Error
    from moe_lint.plan.run import Options, build

    _hf_fresh()
    cpu0 = _cpu()
    try:
        build(Options(model=str(config), gpu="h100", gpus=(8,), seq=4096))
    except (Error, NotBridgeConfig) as exc:
        text = str(exc).strip()
        if "\n" in text or not text:
            return f"input error not one line: plan: {text[:300]!r}"
        if not refused and str(config) in text:
            return f"inconsistent: models accepts, plan refuses: {text[:200]!r}"
    else:
        if refused:
            return f"inconsistent: models refuses, plan builds: {line[:200]!r}"
    spent = _cpu() - cpu0
    if spent > case_seconds:
        return f"slow: plan model loading {spent:.2f} s CPU"
    if full_plan:
        code, err, _ = _cli(["plan", "--model", str(config), "--gpu", "h100", "--gpus", "8",
                             "--seq", "4096", "--top", "1"])  # fmt: skip
        if code not in (0, 1, 2):
            return f"crash: plan exit {code}: {err.strip()[-300:]}"
        if code == 2 and len(err.strip().splitlines()) != 1:
            return f"input error not one line: plan: {err[:300]!r}"


# --------------------------------------------------------------------------- settings and packs

#: The README's ``[tool.moe-lint]`` example, the seed every settings case grows from.
SETTINGS_SEED: dict[str, Any] = {
    "gpus": 256, "gpu": "h100", "model": "deepseek-v3", "select": ["ALL"], "extend-select": [],
    "ignore": ["PAR003"], "fail-on": "error", "format": "text", "bridge": "0.6",
    "megatron-core": "0.19", "extra-fields": ["model.my_gate_width"],
    "introspect-bridge": False, "extend-exclude": ["configs/old/**", "scratch"],
    "memory": {"routing_imbalance": 1.5, "warn-headroom": 0.1},
    "per-file": {"configs/dsv3/*.yaml": {"gpus": 512, "model": "deepseek-v3"}},
    "per-file-ignores": {"configs/debug/*.yaml": ["PAR004", "PAR005"]},
}  # fmt: skip
HOSTILE_GLOBS = [
    "*a*a*a*a*a*a*b.yaml", "**/" * 40 + "q.yaml", "**/a/" * 30 + "x", "[z-a]", "[[:alpha:]]*",
    "a[b--c]", "[a&&b]", "[", "[!]", "x[]", "\\", "*" * 600, "?" * 300 + "*b", "[^/]*", "",
    "/", "./**/", "**", "***", "a/**/b/**/c/**/d", "\n", "\x00", "~nobody/*",
]  # fmt: skip
ODD_SETTINGS: list[Any] = [
    0, -1, 2**63, 10**30, 1.5, float("nan"), float("inf"), -0.0, True, False, "", "x" * 70_000,
    "a\nb", "a\x00b", "~nobody/config.json", "/dev/zero", "../" * 200, "ALL", "PAR", "PAR001",
    "NOPE999", [], ["PAR"] * 3_000, [[[[["deep"]]]]], {}, {"a": {"b": {"c": 1}}},
    {"x": [1, {"y": "z"}]}, "xml", "nan", "1e999", "٣", *HOSTILE_GLOBS,
]  # fmt: skip
SETTING_KEYS = [
    *SETTINGS_SEED, "exclude", "rules", "nodes", "gpus-per-node", "transformer-engine",
    "per_file_ignores", "unknown-key", "a\nb", "\u202e",
]  # fmt: skip


def _deep(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def mutate_settings(table: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One value-wise change of a ``[tool.moe-lint]`` table (in place; returned)."""
    kind = rng.randrange(8)
    key = rng.choice(SETTING_KEYS)
    odd = rng.choice(ODD_SETTINGS)
    if kind == 0:
        table[key] = odd
    elif kind == 1:  # a hostile glob where globs go
        target = rng.choice(["extend-exclude", "exclude", "per-file-ignores", "per-file"])
        glob = rng.choice(HOSTILE_GLOBS)
        if target in ("per-file-ignores", "per-file"):
            section = table.setdefault(target, {})
            if isinstance(section, dict):
                section[glob] = ["PAR004"] if target == "per-file-ignores" else {"gpus": 8}
        else:
            table[target] = [glob] * rng.randint(1, 20)
    elif kind == 2:  # many entries
        target = rng.choice(["select", "ignore", "per-file-ignores", "extend-exclude"])
        count = rng.choice([10, 500, 1_999, 2_001, 5_000])
        if target == "per-file-ignores":
            table[target] = {f"x{i}/*.yaml": ["PAR001"] for i in range(count)}
        else:
            table[target] = [rng.choice(["PAR", "PAR001", "*.yaml"]) for _ in range(count)]
    elif kind == 3:
        table[key] = _deep(odd, rng.choice([3, 60, 70, 500]))
    elif kind == 4:  # a nested table's value
        section = rng.choice(["memory", "per-file", "per-file-ignores"])
        inner = table.get(section)
        if isinstance(inner, dict) and inner:
            inner[rng.choice(list(inner))] = odd
        else:
            table[section] = {str(rng.choice(HOSTILE_GLOBS)): odd}
    elif kind == 5:
        table.pop(key, None)
    elif kind == 6:  # the memory table with odd numbers
        table["memory"] = {rng.choice(["nccl_gib", "routing_imbalance", "flash_attention",
                                       "warn-headroom", "bogus"]): odd}  # fmt: skip
    else:
        table[rng.choice(["model", "gpu", "bridge", "megatron-core"])] = rng.choice(
            [odd, "~nobody/x", "a" * 5_000 + "/config.json", "x\x00y", "deepseek-v3"]
        )
    return table


def _toml_key(key: str) -> str:
    return json.dumps(key)


def _toml_value(value: Any) -> str:
    """A TOML inline value (JSON's string escapes are TOML's; NaN and infinities by name)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def settings_toml(table: dict[str, Any]) -> str:
    return "[tool.moe-lint]\n" + "".join(
        f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in table.items()
    )


def make_settings_case(rng: random.Random) -> bytes:
    """A pyproject.toml: the seed table after 1-4 value-wise mutations, sometimes byte-wise."""
    import copy

    table = copy.deepcopy(SETTINGS_SEED)
    for _ in range(rng.randint(1, 4)):
        mutate_settings(table, rng)
    try:
        raw = settings_toml(table).encode("utf-8", "surrogatepass")
    except RecursionError:
        raw = b"[tool.moe-lint]\nx = " + b"[" * 5_000 + b"]" * 5_000 + b"\n"
    if rng.random() < 0.3:
        for _ in range(rng.randint(1, 3)):
            raw = mutate_bytes(raw, rng)
    return raw


#: Names a linted file may have: long, deep, odd (the settings' globs are matched on them).
def _hostile_names(folder: Path) -> list[str]:
    return [
        str(folder / ("a" * 200 + ".yaml")),
        str(folder.joinpath(*["d"] * 60, "x.yaml")),
        str(folder / "configs" / "debug" / "a\nb.yaml"),
        str(folder / "scratch" / "[z-a].yaml"),
    ]


def check_settings_case(raw: bytes, catalogue: Any, folder: Path, config: str) -> str | None:
    """Read ``raw`` as a pyproject.toml, then use the settings as ``moe-lint`` would."""
    from moe_lint.config.load import parse_text
    from moe_lint.config.settings import load_pyproject
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.errors import Error
    from moe_lint.files import excluder_for
    from moe_lint.linting import check_selectors, lint_document

    path = folder / "pyproject.toml"
    path.write_bytes(raw)
    names = _hostile_names(folder)
    try:
        settings, _ = load_pyproject(path)
        if settings.rules:
            catalogue = load_catalogue(extra_packs=settings.rules, plugins=False)
        check_selectors(catalogue, settings)
        exclude = None if settings.exclude is None else [(p, folder) for p in settings.exclude]
        excluder = excluder_for(exclude, [(p, folder) for p in settings.extend_exclude])
        for name in names:
            excluder.excluded(name, False)
            excluder.excluded_with_parents(name)
        name = names[len(raw) % len(names)]
        result = lint_document(parse_text(config, name), catalogue, settings, [], {})
        if result.error is not None and "\n" in result.error.strip():
            return f"input error not one line: {result.error[:200]!r}"
    except Error as exc:
        return error_problem(exc)
    return None


#: Expressions and templates a hostile pack may hold.
HOSTILE_EXPRESSIONS = [
    "(10**10000)**10000 > 1", "cp ** 100000000 > 1", "len('%0999999999d' % 0) > 1",
    "(" * 300 + "cp" + ")" * 300 + " > 0", "-" * 5000 + "cp > 0", "+".join(["cp"] * 2500),
    "[x for x in range(10**9)] == []", "__import__('os')", "lambda: 1", "cp.__class__",
    "open('/etc/passwd')", "x" * 20_000, "", "   ", "cp >", "str(cp) * 10**8 == ''",
    "[len for len in [cp]]", "divisors(10**18)", "round(cp, 10**9) > 0", "True", "1",
]  # fmt: skip
HOSTILE_TEMPLATES = [
    "{cp:0999999999d}", "{cp!a}", "{model._config}", "{_pow}", "{", "}", "{{}}", "{cp[0]}",
    "x" * 20_000, "{nosuch}", "{model.nosuch}", "\x1b[31m{cp}", "line\nbreak {cp}",
]  # fmt: skip


def pack_seeds() -> list[dict[str, Any]]:
    """The shipped rules as data (yaml.safe_load of rules/*.yaml)."""
    import yaml

    rules: list[dict[str, Any]] = []
    for path in sorted((REPO / "rules").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        rules.extend(r for r in data.get("rules", []) if isinstance(r, dict))
    return rules


def mutate_rule(rule: dict[str, Any], rng: random.Random) -> None:
    kind = rng.randrange(7)
    field = rng.choice([*sorted(rule), "let", "when", "fix", "versions", "bogus-key"])
    if kind == 0:
        rule[field] = rng.choice([*ODD_VALUES[:-2], *HOSTILE_EXPRESSIONS[:4]])
    elif kind == 1:
        rule["when" if "when" in rule else "check"] = rng.choice(HOSTILE_EXPRESSIONS)
    elif kind == 2:
        rule["message"] = rng.choice(HOSTILE_TEMPLATES)
    elif kind == 3:
        rule["let"] = {f"v{i}": rng.choice([*HOSTILE_EXPRESSIONS[:6], "cp + 1"])
                       for i in range(rng.choice([1, 20, 400]))}  # fmt: skip
    elif kind == 4:
        rule[field] = _deep(rng.choice(["x", 1, {}]), rng.choice([10, 70, 400]))
    elif kind == 5:
        rule["versions"] = rng.choice([{"megatron-core": ">=" + "9" * 5000}, {"nope": ">1"},
                                       {"bridge": "~=0.6"}, "x"])  # fmt: skip
    else:
        rule.pop(field, None)


def make_pack_case(rng: random.Random, seeds: list[dict[str, Any]]) -> bytes:
    """A rule pack: 1-5 shipped rules renamed (so they do not clash), mutated field-wise,
    dumped, sometimes with a shared anchor and byte-wise mutations."""
    import copy

    import yaml

    rules = []
    for i in range(rng.randint(1, 5)):
        rule = copy.deepcopy(rng.choice(seeds))
        rule["code"], rule["name"] = f"ZZF{i:03d}", f"fuzz-rule-{i}"
        for _ in range(rng.randint(0, 3)):
            mutate_rule(rule, rng)
        rules.append(rule)
    if rng.random() < 0.05:
        rules = rules * rng.choice([100, 600])  # past MAX_PACK_RULES (and code clashes)
    try:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump({"pack": "fuzz", "rules": rules}, Dumper=dumper, sort_keys=False,
                         width=200)  # fmt: skip
    except (yaml.YAMLError, RecursionError, ValueError):
        text = "rules: []\n"
    raw = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.3:
        for _ in range(rng.randint(1, 3)):
            raw = mutate_bytes(raw, rng)
    return raw


def check_pack_case(raw: bytes, folder: Path, config: str) -> str | None:
    """Load ``raw`` as an extra rule pack and lint a config with it."""
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.errors import Error
    from moe_lint.linting import lint_text

    path = folder / "pack.yaml"
    path.write_bytes(raw)
    try:
        catalogue = load_catalogue(extra_packs=[path], plugins=False)
        result = lint_text(config, catalogue, path="fuzz.yaml")
        if result.error is not None and "\n" in result.error.strip():
            return f"input error not one line: {result.error[:200]!r}"
    except Error as exc:
        return error_problem(exc)
    return None


def peak_rss_mb() -> float:
    """This process's peak RSS. ``ru_maxrss`` survives exec on Linux (a fuzz run started from
    a 400 MB pytest reports 400 MB before its first case), so read the address space's own
    high-water mark, ``VmHWM``, where there is one."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=0, help="stop after this many cases")
    p.add_argument("--seconds", type=float, default=60.0, help="stop after this long (wall)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--case-seconds", type=float, default=2.0, help="CPU limit per case")
    p.add_argument("--max-rss-mb", type=float, default=300.0)
    p.add_argument("--fix-every", type=int, default=10, help="run the fix loop on 1 case in N")
    p.add_argument("--save", type=Path, default=None, help="folder for failing inputs")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--hf",
        action="store_true",
        help="mutate HF config.json files (tests/data/hf-configs) instead",
    )
    p.add_argument(
        "--plan-every",
        type=int,
        default=25,
        help="--hf and --target plan: run the whole `moe-lint plan` on 1 case in N",
    )
    p.add_argument("--dump-case", type=int, metavar="N",
                   help="write case N of --seed to --save (or stdout) and stop: a reported "
                   "case again, without running the cases before it")  # fmt: skip
    p.add_argument(
        "--target",
        choices=("configs", "settings", "packs", "scripts", "model-args", "plan", "all"),
        default="configs",
        help="what to mutate: configs (default), pyproject settings, rule packs, launch "
        "scripts, MODEL_ARGS files, plan command lines (bench/fuzz_inputs.py), or all",
    )
    ns = p.parse_args(argv)
    import os

    os.environ.pop("MOE_LINT_STRICT", None)
    if ns.hf:  # the CLI runs in this process: no cache folder read or written per command
        os.environ["MOE_LINT_NO_CACHE"] = "1"
    import jsonschema

    from moe_lint.engine.catalogue import load_catalogue

    catalogue = load_catalogue(plugins=False)
    INT_FIELDS.update(int_fields())
    schema = json.loads((REPO / "docs" / "findings.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    corpus = hf_seeds() if ns.hf else seeds()
    scripts = script_seeds() if ns.target in ("scripts", "all") else []
    model_args = model_args_seeds() if ns.target in ("model-args", "all") else []
    packs = pack_seeds() if ns.target in ("packs", "all") else []
    good = (REPO / "examples" / "dsv3_128k_h100.yaml").read_text(encoding="utf-8")
    scratch = Path(tempfile.mkdtemp(prefix="moe-lint-fuzz-work-"))
    if ns.hf:
        kinds = ["hf"]
    else:
        kinds = (["configs", "settings", "packs", "scripts", "model-args", "plan"]
                 if ns.target == "all" else [ns.target])  # fmt: skip
    rng = random.Random(ns.seed)
    if ns.dump_case:  # the checks draw nothing from rng: generating alone replays the cases
        for _ in range(ns.dump_case):
            name, text, _expect = (make_hf_case if ns.hf else make_case)(rng, corpus)
        if ns.save is None:
            sys.stdout.buffer.write(text)
        else:
            ns.save.mkdir(parents=True, exist_ok=True)
            (ns.save / f"case-{ns.dump_case}.{'json' if ns.hf else 'yaml'}").write_bytes(text)
        return 0
    save = ns.save or Path(tempfile.mkdtemp(prefix="moe-lint-fuzz-"))
    save.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="moe-lint-fuzz-hf-"))
    (work / "x.yaml").write_text(HF_YAML, encoding="utf-8")
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_alarm)
    failures: Counter[str] = Counter()
    examples: list[dict[str, Any]] = []
    slowest = 0.0
    slowest_case: dict[str, Any] = {}
    start = time.perf_counter()
    cases = 0
    while True:
        if ns.cases and cases >= ns.cases:
            break
        if not ns.cases and time.perf_counter() - start >= ns.seconds:
            break
        kind_of_case = rng.choice(kinds) if len(kinds) > 1 else kinds[0]
        suffix = ".yaml"
        if kind_of_case == "settings":
            name, text, expect, suffix = "pyproject.toml", make_settings_case(rng), None, ".toml"
        elif kind_of_case == "packs":
            name, text, expect = "rules/*.yaml", make_pack_case(rng, packs), None
        elif kind_of_case == "hf":
            name, text, expect = make_hf_case(rng, corpus)
            suffix = ".json"
        elif kind_of_case == "scripts":
            name, seed_text = rng.choice(scripts)
            text, expect, suffix = mutate_script(seed_text, rng, mutate_bytes), None, ".sh"
        elif kind_of_case == "model-args":
            name, seed_text = rng.choice(model_args)
            text, expect = mutate_model_args(seed_text, rng, mutate_bytes), None
        elif kind_of_case == "plan":
            plan_args = make_plan_case(rng)
            name, text, expect, suffix = "plan", "\0".join(plan_args).encode(), None, ".args"
        else:
            name, text, expect = make_case(rng, corpus)
        cases += 1
        cpu0 = _cpu()
        # --hf: five commands a case (each held to --case-seconds), a whole plan on some
        scale = 12 if ns.hf else 1
        hang_after = max(ns.case_seconds * 5, 1.0) * scale  # CPU seconds: a busy hang
        blocked_after = max(ns.case_seconds * 30, 60.0) * scale  # wall seconds: a blocking one
        try:
            signal.setitimer(signal.ITIMER_PROF, hang_after)
            signal.setitimer(signal.ITIMER_REAL, blocked_after)
            if kind_of_case == "hf":
                full_plan = ns.plan_every > 0 and cases % ns.plan_every == 0
                failure = check_hf_case(text, work, ns.case_seconds, full_plan, expect)
            elif kind_of_case == "settings":
                failure = check_settings_case(text, catalogue, scratch, good)
            elif kind_of_case == "packs":
                failure = check_pack_case(text, scratch, good)
            elif kind_of_case in ("scripts", "model-args"):
                failure = check_text_case(text, suffix, catalogue, scratch)
            elif kind_of_case == "plan":
                full = ns.plan_every > 0 and cases % ns.plan_every == 0
                failure = check_plan_case(plan_args, full)
            else:
                failure = check_case(text, catalogue, validator, cases % ns.fix_every == 0, expect)
        except Hang:
            failure = f"hang: over {hang_after:.0f} s CPU or {blocked_after:.0f} s"
        except Exception as exc:  # the finding this script exists for
            failure = f"crash: {type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
        spent = _cpu() - cpu0
        if spent > slowest:
            slowest, slowest_case = spent, {"case": cases, "from": name}
        whole_plan = kind_of_case == "plan" and ns.plan_every > 0 and cases % ns.plan_every == 0
        # --hf: held per command; a whole plan search is not a per-input cost
        if failure is None and spent > ns.case_seconds and not ns.hf and not whole_plan:
            failure = f"slow: {spent:.2f} s CPU"
        rss_mb = peak_rss_mb()
        if failure is None and rss_mb > ns.max_rss_mb:
            failure = f"memory: peak RSS {rss_mb:.0f} MB"
        if failure is not None:
            kind = failure.split(":")[0]
            failures[kind] += 1
            target = save / f"case-{cases}{suffix}"
            target.write_bytes(text)
            target.with_suffix(".txt").write_text(f"from {name}\n{failure}\n", encoding="utf-8")
            if len(examples) < 20:
                examples.append({"case": cases, "from": name, "failure": failure,
                                 "saved": str(target)})  # fmt: skip
            if kind == "memory":  # peak RSS cannot go down again: stop counting it
                break
    wall = time.perf_counter() - start
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)
    report = {
        "mode": "hf" if ns.hf else "yaml",
        "seed": ns.seed,
        "cases": cases,
        "seconds": round(wall, 1),
        "cases_per_second": round(cases / wall, 1) if wall else 0.0,
        "failures": sum(failures.values()),
        "by_kind": dict(failures),
        "slowest_case_cpu_s": round(slowest, 3),
        "slowest_case": slowest_case,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "seed_files": len(scripts) + len(model_args)
        if ns.target in ("scripts", "model-args")
        else len(corpus),
        "target": ns.target,
        "examples": examples,
        "saved_to": str(save),
    }
    if ns.json:
        print(json.dumps(report, indent=2))
    else:
        rate = report["cases_per_second"]
        target = "hf" if ns.hf else ns.target
        print(f"fuzz ({target}): {cases} cases in {wall:.1f} s ({rate} cases/s), "
              f"seed {ns.seed}, {report['seed_files']} seed files")  # fmt: skip
        print(f"failures: {report['failures']} {dict(failures) or ''}".rstrip())
        print(f"slowest case: {slowest:.3f} s CPU (case {slowest_case.get('case')}); "
              f"peak RSS {report['peak_rss_mb']} MB")  # fmt: skip
        for example in examples:
            print(f"  case {example['case']} (from {example['from']}): {example['failure']}"
                  f"  -> {example['saved']}")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
