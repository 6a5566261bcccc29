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
- the case takes more than ``--case-seconds`` of CPU time (default 2 s; a hang is cut by
  ``SIGALRM`` at 5× that) or the process's peak RSS grows past ``--max-rss-mb`` (default 300);
- a fixed text does not load again, or re-linting it raises.

Failing inputs are written to ``--save DIR`` (default a temp dir) as ``case-N.yaml`` with a
``.txt`` next to it naming the failure. The report (stdout) gives cases, cases/s, failures by
kind and the seed, so a run can be repeated exactly::

    python bench/fuzz.py --seconds 600              # ten minutes
    python bench/fuzz.py --cases 20000 --seed 7
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
    ns = p.parse_args(argv)
    import os

    os.environ.pop("MOE_LINT_STRICT", None)
    import jsonschema

    from moe_lint.engine.catalogue import load_catalogue

    catalogue = load_catalogue(plugins=False)
    INT_FIELDS.update(int_fields())
    schema = json.loads((REPO / "docs" / "findings.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    corpus = seeds()
    rng = random.Random(ns.seed)
    save = ns.save or Path(tempfile.mkdtemp(prefix="moe-lint-fuzz-"))
    save.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _on_alarm)
    failures: Counter[str] = Counter()
    examples: list[dict[str, Any]] = []
    slowest = 0.0
    start = time.perf_counter()
    cases = 0
    while True:
        if ns.cases and cases >= ns.cases:
            break
        if not ns.cases and time.perf_counter() - start >= ns.seconds:
            break
        name, text, expect = make_case(rng, corpus)
        cases += 1
        cpu0 = _cpu()
        hang_after = max(ns.case_seconds * 5, 1.0)
        try:
            signal.setitimer(signal.ITIMER_REAL, hang_after)
            failure = check_case(text, catalogue, validator, cases % ns.fix_every == 0, expect)
        except Hang:
            failure = f"hang: over {hang_after:.0f} s"
        except Exception as exc:  # the finding this script exists for
            failure = f"crash: {type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        spent = _cpu() - cpu0
        slowest = max(slowest, spent)
        if failure is None and spent > ns.case_seconds:
            failure = f"slow: {spent:.2f} s CPU"
        rss_mb = peak_rss_mb()
        if failure is None and rss_mb > ns.max_rss_mb:
            failure = f"memory: peak RSS {rss_mb:.0f} MB"
        if failure is not None:
            kind = failure.split(":")[0]
            failures[kind] += 1
            target = save / f"case-{cases}.yaml"
            target.write_bytes(text)
            target.with_suffix(".txt").write_text(f"from {name}\n{failure}\n", encoding="utf-8")
            if len(examples) < 20:
                examples.append({"case": cases, "from": name, "failure": failure,
                                 "saved": str(target)})  # fmt: skip
            if kind == "memory":  # peak RSS cannot go down again: stop counting it
                break
    wall = time.perf_counter() - start
    report = {
        "seed": ns.seed,
        "cases": cases,
        "seconds": round(wall, 1),
        "cases_per_second": round(cases / wall, 1) if wall else 0.0,
        "failures": sum(failures.values()),
        "by_kind": dict(failures),
        "slowest_case_cpu_s": round(slowest, 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "seed_files": len(corpus),
        "examples": examples,
        "saved_to": str(save),
    }
    if ns.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"fuzz: {cases} cases in {wall:.1f} s ({report['cases_per_second']} cases/s), "
              f"seed {ns.seed}, {len(corpus)} seed files")  # fmt: skip
        print(f"failures: {report['failures']} {dict(failures) or ''}".rstrip())
        print(f"slowest case: {slowest:.3f} s CPU; peak RSS {report['peak_rss_mb']} MB")
        for example in examples:
            print(f"  case {example['case']} (from {example['from']}): {example['failure']}"
                  f"  -> {example['saved']}")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
