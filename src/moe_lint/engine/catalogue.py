"""The rule catalogue: YAML packs (policy as data) plus registered Python checks.

Built-in packs live in the top-level ``rules/`` folder of the source tree, which the wheel ships
as ``moe_lint/rules``. Extra packs come from ``--rules FILE`` or ``[tool.moe-lint] rules``; such
packs are data only: their conditions run in the sandboxed expression language and may name a
registered Python check, but can never import or execute code. Third-party packages add packs
and checks through the ``moe_lint.rules`` entry-point group.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable
from functools import cache
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from moe_lint.bounds import (
    MAX_PACK_BYTES,
    MAX_PACK_NODES,
    MAX_PACK_RULES,
    MAX_REPR_CHARS,
    bounded_repr,
    bounded_str,
)
from moe_lint.config import fields
from moe_lint.config.load import load_data, read_file
from moe_lint.config.versions import check_spec, package_key
from moe_lint.engine import checks
from moe_lint.engine.expr import (
    CONFIG_FUNCTIONS,
    FACT_NAMES,
    FUNCTIONS,
    SECTION_NAMES,
    Compiled,
    Template,
    compile_template,
)
from moe_lint.engine.findings import APPLICABILITIES, SEVERITIES, SEVERITY_RANK
from moe_lint.errors import InputError, RulePackError
from moe_lint.records import NamedTuple, field, record

ENTRY_POINT_GROUP = "moe_lint.rules"
_CODE = re.compile(r"^[A-Z]{2,4}\d{3}$")
_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_RULE_KEYS = {
    "code", "name", "severity", "summary", "path", "related", "let", "when", "check", "message",
    "derivation", "fix", "source", "stage", "docs", "covers", "versions", "applies_to", "modes",
    "unstated_severity", "implied_by",
}  # fmt: skip
#: The inputs a rule may be limited to (``applies_to``): Bridge configs (YAML dumps and
#: overrides) or Megatron-LM arguments (scripts, MODEL_ARGS files, argument lists). A check
#: only Bridge makes (ConfigContainer.validate, a provider) does not run for Megatron-LM input.
INPUT_KINDS = ("bridge", "megatron-lm")
#: What a run does, which a rule may be limited to (``modes``): ``training`` (the optimizer,
#: gradients, the training loop, its batches and memory) or ``inference`` (a Megatron-LM
#: inference entry script or ``MODE: inference`` functional test: the model is built and run
#: forward in eval mode, with no optimizer). Config-class ``__post_init__`` asserts,
#: validate_args asserts, process groups and module construction run in both.
RUN_MODES = ("training", "inference")
#: When the framework check an error rule anticipates raises (applying the command-line
#: overrides, before any config is built, is ``startup``; Bridge's ConfigContainer.validate
#: and MCore's __post_init__ are ``config``; parallel_state.initialize_model_parallel is
#: ``process-groups``; module constructors are ``model-build``; the first forward/backward or
#: optimizer step, an out-of-memory included, is ``first-step``). ``silent`` is an error rule
#: for a config the framework runs without raising, training wrongly (its message says how).
STAGES = ("startup", "config", "process-groups", "model-build", "first-step", "silent")
#: Catalogue IDs from docs/domain (PAR-01, ATT-14, BR-07, RT-01, SEED-R1, ...).
_COVER_ID = re.compile(r"^[A-Z]+-[A-Z0-9.]+$")
_DOC_KEYS = {
    "what", "why", "example", "use_instead", "references", "example_args", "use_instead_args",
}  # fmt: skip
_FIX_KEYS = {"title", "applicability", "set"}


class PythonCheck(NamedTuple):
    """A check that needs code; yields violations with the parameters its templates use."""

    func: Callable[..., Iterable[Any]]
    params: frozenset[str]
    #: Derived facts the check reads, so a finding shows their derivations as a condition
    #: rule's would (the facts its templates name count as well).
    facts: frozenset[str] = frozenset()


class FixSpec(NamedTuple):
    title: Template
    applicability: str
    sets: tuple[tuple[str, Compiled], ...]


class Rule(NamedTuple):
    """One validated rule entry."""

    code: str
    name: str
    severity: str
    summary: str
    path: str | None
    related: tuple[str, ...]
    lets: tuple[tuple[str, Compiled], ...]
    when: Compiled | None
    check: str | None
    message: Template
    derivation: Template | None
    fix: FixSpec | None
    source: str
    docs: dict[str, Any]
    pack: str
    #: For error rules: when the real check raises (one of STAGES); None for other severities.
    stage: str | None = None
    #: Fact names any of its expressions read (for the automatic derivation line).
    facts_used: frozenset[str] = frozenset()
    #: Catalogue IDs (docs/domain) this rule encodes; see docs/coverage.md.
    covers: tuple[str, ...] = ()
    #: Package -> version specifier; the rule only runs for matching framework versions.
    versions: tuple[tuple[str, str], ...] = ()
    #: The lets `when` needs (evaluated first); the others only run once it holds.
    when_lets: tuple[tuple[str, Compiled], ...] = ()
    late_lets: tuple[tuple[str, Compiled], ...] = ()
    #: The inputs it applies to (INPUT_KINDS); empty: every input.
    applies_to: tuple[str, ...] = ()
    #: The run modes it applies to (RUN_MODES); empty: every mode.
    modes: tuple[str, ...] = ()
    #: The severity when a package its ``versions`` gate names is not stated: the gate is then
    #: judged against that package's newest release, which the user's may predate (None: the
    #: rule's own severity either way).
    unstated_severity: str | None = None
    #: Codes whose finding states this one's cause too: when one of them is reported for the
    #: same input, this finding is folded into it (one cause, one finding; engine/implied.py).
    implied_by: tuple[str, ...] = ()


@record
class Catalogue:
    """The loaded rules, indexed by code and name, with their Python checks."""

    rules: list[Rule]
    by_code: dict[str, Rule]
    by_name: dict[str, Rule]
    checks: dict[str, PythonCheck]
    #: Codes of the rules moe-lint ships (trusted), as opposed to plugin and repository packs.
    shipped: frozenset[str] = frozenset()
    #: Selector -> its rules, filled by resolve (each file resolves the same selectors).
    resolved: dict[str, list[Rule]] = field(default_factory=dict, repr=False, compare=False)

    def resolve(self, selector: str) -> list[Rule]:
        """Rules matched by a code, a name, a code prefix (``PAR``) or ``ALL``."""
        found = self.resolved.get(selector)
        if found is None:
            sel = selector.strip()
            if sel.upper() == "ALL":
                found = list(self.rules)
            elif sel in self.by_name:
                found = [self.by_name[sel]]
            else:
                found = [r for r in self.rules if r.code.startswith(sel.upper())]
            if len(self.resolved) < 10_000:
                self.resolved[selector] = found
        return list(found)


def field_exists(section: str, name: str) -> bool:
    """True when ``section.name`` is a field rules may read (a key of the field table)."""
    return name in fields.section(section) or section == "env_vars"


def builtin_rules_dir() -> Path:
    """``rules/`` inside an installed wheel, or the top-level folder of a source checkout."""
    here = Path(__file__).resolve().parent.parent
    installed = here / "rules"
    if installed.is_dir():
        return installed
    return here.parent.parent / "rules"


class LazyChecks(dict[str, Any]):
    """Check name -> PythonCheck, importing a check's module only when the check is used.

    Importing the check modules costs ~15 ms; most files run only a few Python checks, and
    the name -> module index ships in the compiled catalogue (``_compiled_rules.CHECK_INDEX``).
    """

    def __init__(self, index: dict[str, str]) -> None:
        super().__init__({name: None for name in index})
        self.index = index

    def __getitem__(self, name: str) -> PythonCheck:
        check = super().__getitem__(name)
        if check is None:
            check = importlib.import_module(self.index[name]).CHECKS[name]
            self[name] = check
        return check  # type: ignore[no-any-return]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default  # noqa: SIM401 - dict.get skips __getitem__

    def values(self) -> Any:
        return [self[name] for name in self]

    def items(self) -> Any:
        return [(name, self[name]) for name in self]


def builtin_checks(shipped: Any = None) -> dict[str, PythonCheck]:
    """The registered Python checks; ``shipped`` is the compiled catalogue when it is current."""
    if shipped is None:
        return LazyChecks(checks.check_index())
    return LazyChecks(dict(shipped.CHECK_INDEX))


def _load_yaml(path: Path, budget: list[int] | None = None) -> Any:
    """A pack's data, read and parsed under the bounds of any input: a regular file only (a
    FIFO would block), YAML nodes and nesting as for a config; with ``budget`` ([bytes left]),
    the packs from outside moe-lint share ``bounds.MAX_PACK_BYTES``."""
    limit = MAX_PACK_BYTES if budget is None else max(budget[0], 0)
    try:
        raw = read_file(str(path), limit)
    except InputError as exc:
        raise RulePackError(f"{path}: cannot read rule pack: {exc.message}") from None
    if budget is not None:
        budget[0] -= len(raw)
        if budget[0] < 0:
            raise RulePackError(
                f"{path}: rule packs from outside moe-lint hold more than {MAX_PACK_BYTES:,} "
                "bytes in all (bounds.MAX_PACK_BYTES)"
            )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RulePackError(f"{path}: rule pack is not UTF-8 (byte {exc.start})") from None
    try:
        return load_data(text)
    except InputError as exc:
        raise RulePackError(f"{path}: rule pack is not valid YAML: {exc.message}") from None


def _rule_from_entry(
    entry: Any,
    where: str,
    pack: str,
    checks: dict[str, PythonCheck],
    budget: list[int] | None = None,
) -> Rule:
    """One validated rule; with ``budget`` (load_pack's), its expressions' syntax nodes are
    charged to ``budget[2]`` as each compiles (``bounds.MAX_PACK_NODES``)."""

    # Lazy: the expression compiler (and ast), only for packs compiled in this run.
    from moe_lint.engine.expr_compiler import compile_expr

    def expression(text: Any, at: str, known: frozenset[str]) -> Compiled:
        compiled = compile_expr(text, at, known, field_exists)
        if budget is not None:
            budget[2] -= compiled.cost
            if budget[2] < 0:
                raise RulePackError(
                    f"{at}: rule packs from outside moe-lint hold more than "
                    f"{MAX_PACK_NODES:,} expression syntax nodes in all (bounds.MAX_PACK_NODES)"
                )
        return compiled

    if not isinstance(entry, dict):
        raise RulePackError(f"{where}: each rule must be a mapping")
    unknown = set(entry) - _RULE_KEYS
    if unknown:
        raise RulePackError(f"{where}: unknown rule keys {bounded_repr(sorted(map(str, unknown)))}")
    code = entry.get("code")
    if not isinstance(code, str) or not _CODE.match(code):
        raise RulePackError(f"{where}: code {bounded_repr(code)} must look like ABC123")
    where = f"{where} {code}"
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RulePackError(f"{where}: name {bounded_repr(name)} must be kebab-case")
    severity = entry.get("severity")
    if severity not in SEVERITIES:
        raise RulePackError(f"{where}: severity must be one of {SEVERITIES}")
    for key in ("summary", "message", "source"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise RulePackError(f"{where}: {key!r} is required")
    docs = entry.get("docs")
    if not isinstance(docs, dict) or set(docs) - _DOC_KEYS:
        raise RulePackError(f"{where}: docs must be a mapping with keys from {sorted(_DOC_KEYS)}")
    for key in ("what", "why", "example", "use_instead"):
        if not isinstance(docs.get(key), str) or not docs[key].strip():
            raise RulePackError(f"{where}: docs.{key} is required")
    when, check = entry.get("when"), entry.get("check")
    if (when is None) == (check is None):
        raise RulePackError(f"{where}: give exactly one of 'when' or 'check'")
    names: set[str] = set(FACT_NAMES) | set(FUNCTIONS) | set(CONFIG_FUNCTIONS) | SECTION_NAMES
    if check is not None:
        if not isinstance(check, str) or check not in checks:
            raise RulePackError(f"{where}: unknown check {bounded_repr(check)}")
        names |= checks[check].params
        used_by_check = checks[check].facts
    else:
        used_by_check = frozenset()
    lets: list[tuple[str, Compiled]] = []
    raw_lets = entry.get("let") or {}
    if not isinstance(raw_lets, dict):
        raise RulePackError(f"{where}: 'let' must be a mapping of name: expression")
    for let_name, text in raw_lets.items():
        if not str(let_name).isidentifier() or let_name in names:
            raise RulePackError(f"{where}: bad or shadowing let name {bounded_repr(let_name)}")
        lets.append(
            (
                let_name,
                expression(text, f"{where} let.{bounded_str(str(let_name), 60)}", frozenset(names)),
            )
        )
        names.add(let_name)
    frozen = frozenset(names)
    compiled_when = expression(when, f"{where} when", frozen) if when is not None else None
    path = entry.get("path")
    if path is None and check is None:
        raise RulePackError(f"{where}: 'path' is required for condition rules")
    if path is not None and (not isinstance(path, str) or path.split(".")[0] not in SECTION_NAMES):
        raise RulePackError(f"{where}: path {bounded_repr(path)} must start with a config section")
    related = entry.get("related") or []
    if not isinstance(related, list) or not all(isinstance(p, str) for p in related):
        raise RulePackError(f"{where}: 'related' must be a list of config paths")
    message = compile_template(entry["message"], f"{where} message", frozen, field_exists)
    derivation = (
        compile_template(entry["derivation"], f"{where} derivation", frozen, field_exists)
        if entry.get("derivation")
        else None
    )
    fix = None
    if entry.get("fix") is not None:
        raw_fix = entry["fix"]
        if not isinstance(raw_fix, dict) or set(raw_fix) - _FIX_KEYS or "title" not in raw_fix:
            raise RulePackError(f"{where}: fix needs 'title' and optional applicability/set")
        applicability = raw_fix.get("applicability", "display-only")
        if applicability not in APPLICABILITIES:
            raise RulePackError(f"{where}: fix applicability must be one of {APPLICABILITIES}")
        sets = []
        for set_path, text in (raw_fix.get("set") or {}).items():
            if str(set_path).split(".")[0] not in SECTION_NAMES:
                raise RulePackError(
                    f"{where}: fix path {bounded_repr(set_path)} must start with a section"
                )
            sets.append((str(set_path), expression(text, f"{where} fix.set", frozen)))
        if applicability != "display-only" and not sets and check is None:
            raise RulePackError(f"{where}: an applicable fix needs 'set' values")
        fix = FixSpec(
            compile_template(raw_fix["title"], f"{where} fix.title", frozen, field_exists),
            applicability,
            tuple(sets),
        )
    used: set[str] = set(used_by_check)
    for compiled in [c for _, c in lets] + ([compiled_when] if compiled_when else []):
        used |= compiled.names
    for template in (message, derivation, fix.title if fix else None):
        if template is not None:
            used |= {f for f in template.fields if "." not in f}
    if check is not None:
        used |= checks[check].facts
    covers = entry.get("covers") or []
    if not isinstance(covers, list) or not all(
        isinstance(c, str) and _COVER_ID.match(c) for c in covers
    ):
        raise RulePackError(f"{where}: 'covers' must be a list of catalogue IDs like PAR-01")
    versions = _versions(entry.get("versions"), where)
    unstated_severity = _unstated_severity(entry, severity, versions, where)
    applies_to = entry.get("applies_to") or []
    if not isinstance(applies_to, list) or not all(k in INPUT_KINDS for k in applies_to):
        raise RulePackError(f"{where}: 'applies_to' must be a list of {list(INPUT_KINDS)}")
    modes = entry.get("modes", [])
    if (
        not isinstance(modes, list)
        or ("modes" in entry and not modes)
        or not all(isinstance(m, str) and m in RUN_MODES for m in modes)
    ):
        raise RulePackError(f"{where}: 'modes' must be a non-empty list of {list(RUN_MODES)}")
    stage = entry.get("stage")
    if stage is not None and stage not in STAGES:
        raise RulePackError(f"{where}: stage must be one of {STAGES}")
    implied_by = entry.get("implied_by") or []
    if not isinstance(implied_by, list) or not all(
        isinstance(c, str) and _CODE.match(c) and c != code for c in implied_by
    ):
        raise RulePackError(f"{where}: 'implied_by' must be a list of other rule codes")
    return Rule(
        code=code,
        name=name,
        severity=severity,
        summary=entry["summary"].strip(),
        path=path,
        related=tuple(related),
        lets=tuple(lets),
        when=compiled_when,
        check=check,
        message=message,
        derivation=derivation,
        fix=fix,
        source=entry["source"].strip(),
        docs=docs,
        pack=pack,
        stage=stage,
        facts_used=frozenset(used & FACT_NAMES),
        covers=tuple(covers),
        versions=versions,
        when_lets=_needed_lets(lets, compiled_when),
        late_lets=tuple(item for item in lets if item not in _needed_lets(lets, compiled_when)),
        applies_to=tuple(applies_to),
        modes=tuple(modes),
        unstated_severity=unstated_severity,
        implied_by=tuple(implied_by),
    )


def _needed_lets(
    lets: list[tuple[str, Compiled]], when: Compiled | None
) -> tuple[tuple[str, Compiled], ...]:
    """The lets `when` reads, directly or through other lets, in their written order."""
    if when is None:
        return tuple(lets)
    needed = set(when.names)
    for name, compiled in reversed(lets):
        if name in needed:
            needed |= compiled.names
    return tuple(item for item in lets if item[0] in needed)


def _unstated_severity(
    entry: dict[str, Any], severity: str, versions: tuple[tuple[str, str], ...], where: str
) -> str | None:
    """A lower severity for a version-gated rule when the version is not stated."""
    raw = entry.get("unstated_severity")
    if raw is None:
        return None
    if not versions:
        raise RulePackError(f"{where}: 'unstated_severity' needs a 'versions' gate")
    if raw not in SEVERITIES or SEVERITY_RANK[raw] >= SEVERITY_RANK[severity]:
        lower = [s for s in SEVERITIES if SEVERITY_RANK[s] < SEVERITY_RANK[severity]]
        raise RulePackError(f"{where}: 'unstated_severity' must be one of {lower}")
    return str(raw)


def _versions(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise RulePackError(f"{where}: 'versions' must map a package to a specifier")
    out = []
    for package, spec in raw.items():
        key = package_key(str(package))
        if key is None:
            raise RulePackError(f"{where}: unknown package {bounded_repr(package)} in 'versions'")
        try:
            check_spec(str(spec))
        except ValueError as exc:
            raise RulePackError(f"{where}: {exc}") from None
        out.append((key, str(spec)))
    return tuple(out)


def load_pack(
    path: Path, checks: dict[str, PythonCheck], budget: list[int] | None = None
) -> list[Rule]:
    """Load and validate one pack file; ``budget`` ([bytes, rules, expression nodes left])
    bounds the packs from outside moe-lint together (``bounds.MAX_PACK_BYTES``,
    ``bounds.MAX_PACK_RULES``, ``bounds.MAX_PACK_NODES``)."""
    data = _load_yaml(path, budget)
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise RulePackError(f"{path}: a rule pack is a mapping with a 'rules' list")
    if budget is not None:
        budget[1] -= len(data["rules"])
        if budget[1] < 0:
            raise RulePackError(
                f"{path}: rule packs from outside moe-lint hold more than {MAX_PACK_RULES:,} "
                "rules in all (bounds.MAX_PACK_RULES)"
            )
    pack = bounded_str(str(data.get("pack") or path.stem), 100)
    rules = []
    for i, entry in enumerate(data["rules"]):
        try:
            rules.append(_rule_from_entry(entry, f"{path.name}[{i}]", pack, checks, budget))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            # A value of a shape no check above foresaw: the pack is malformed, not moe-lint.
            raise RulePackError(
                f"{path.name}[{i}]: malformed rule ({type(exc).__name__}: "
                f"{bounded_str(str(exc), MAX_REPR_CHARS)})"
            ) from None
    return rules


#: Files besides the packs whose content decides what the shipped packs compile to (relative
#: to the package folder); ``checks*.py`` are added (their CHECKS tables give names and params).
ENGINE_FILES = (
    "engine/catalogue.py", "engine/expr.py", "engine/expr_compiler.py", "engine/findings.py",
    "config/versions.py", "analysis/facts.py", "data/fields.json",
)  # fmt: skip


def shipped_hash(rules_dir: Path | None = None, package: Path | None = None) -> str:
    """A digest of the shipped packs and the engine files they compile with (content only).

    ``_compiled_rules.SOURCE_HASH`` is this digest for the files it was generated from; the
    same bytes give the same digest in a checkout and in an installed wheel. It detects an
    edit, not tampering (the files are the user's own checkout), so a CRC-32 of each file's
    name, length and bytes does: 1 ms for the ~50 files, where SHA-256 took 6 ms with the
    ``hashlib`` import (OpenSSL's start-up), on every start in a checkout.
    """
    rules_dir = rules_dir or builtin_rules_dir()
    package = package or Path(__file__).resolve().parent.parent
    files = [(f"rules/{p.name}", p) for p in sorted(rules_dir.glob("*.yaml"))]
    files += [(name, package / name) for name in ENGINE_FILES]
    files += [
        (f"engine/checks/{p.name}", p) for p in sorted((package / "engine/checks").glob("*.py"))
    ]
    # Lazy: binascii (already imported with PyYAML) only where the digest is taken.
    import binascii

    digest = 0
    for label, path in files:
        data = path.read_bytes()
        digest = binascii.crc32(f"{label}\0{len(data)}\0".encode(), digest)
        digest = binascii.crc32(data, digest)
    return f"crc32:{len(files)}:{digest:08x}"


def installed_wheel() -> bool:
    """True when this package is an installed (non-editable) wheel: the packs ship inside it as
    ``moe_lint/rules``, which only the wheel build creates (a source checkout and an editable
    install keep them in the top-level ``rules/`` folder)."""
    return (Path(__file__).resolve().parent.parent / "rules").is_dir()


def shipped_module() -> Any:
    """``moe_lint.engine._compiled_rules`` when it was made from the files on disk, else None.

    A stale module (packs or engine edited in a checkout since it was generated), a missing or
    broken one, or an unreadable source file: the caller compiles the packs for this run. In an
    installed wheel the build hook generated the module from the very files it ships beside it,
    so nothing can be edited in between: the digest (~820 KB hashed, ~5 ms with ``hashlib``)
    is only computed in a source checkout or editable install, where packs and engine change.
    """
    try:
        module = importlib.import_module("moe_lint.engine._compiled_rules")
        stamp = getattr(module, "SOURCE_HASH", None)
        if stamp is not None and installed_wheel():
            return module
        current = shipped_hash()
    except Exception:  # a missing, half-written or unreadable module is only slower, never fatal
        return None
    return module if stamp == current else None


_EP_NAME = re.compile(r"[-_.]+")


def _entry_point_plugins() -> list[tuple[str, Any]]:
    """(name, loadable) for each ``moe_lint.rules`` entry point, in importlib.metadata's order.

    ``importlib.metadata.entry_points`` costs ~20 ms per process (importing it is most of
    that); reading the ``entry_points.txt`` of each ``*.dist-info``/``*.egg-info`` folder on
    sys.path directly costs ~2 ms and finds the same entry points, so nothing is cached. Any
    sys.path entry or finder that this scan does not model (a zip file, an ``.egg``, a custom
    distribution finder) sends the lookup to importlib.metadata itself.
    """
    found = _scan_entry_points()
    if found is None:
        # Lazy: importlib.metadata (~10 ms) only when Bridge or entry-point packs are looked up.
        from importlib.metadata import entry_points

        found = [(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)]
    return [(name, _EntryPoint(value)) for name, value in found]


def _scan_entry_points() -> list[tuple[str, str]] | None:
    """The entry points of ENTRY_POINT_GROUP from the metadata folders on sys.path, or None."""
    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return None
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        if not isinstance(entry, str) or entry.lower().endswith(".egg"):
            return None
        root = entry or "."
        try:
            with os.scandir(root) as listing:
                names = [e.name for e in listing]
        except NotADirectoryError:
            return None  # a zip file on sys.path: let importlib.metadata read it
        except OSError:
            continue
        for name in names:
            low = name.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            # importlib.metadata's _unique(): the first distribution of a name wins.
            dist = _EP_NAME.sub("_", low.rpartition(".")[0].partition("-")[0])
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(root, name, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if ENTRY_POINT_GROUP in text:
                found.extend(_group_entries(text, os.path.join(root, name)))
    return found


def _group_entries(text: str, where: str) -> list[tuple[str, str]]:
    """``name = value`` lines of ENTRY_POINT_GROUP (importlib.metadata.Sectioned's reading)."""
    section = None
    out: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section == ENTRY_POINT_GROUP:
            name, sep, value = line.partition("=")
            if not sep:
                raise RulePackError(
                    f"{where}: bad entry point line {bounded_repr(line)} in [{section}]"
                )
            out.append((name.strip(), value.strip()))
    return out


class _EntryPoint:
    """The ``module:attr`` of an entry point, loaded like importlib.metadata.EntryPoint.load."""

    def __init__(self, value: str) -> None:
        self.value = value

    def load(self) -> Any:
        module, _, attr = self.value.partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in attr.strip().split(".") if attr.strip() else ():
            obj = getattr(obj, part)
        return obj


def load_catalogue(extra_packs: Iterable[str | Path] = (), plugins: bool = True) -> Catalogue:
    """Built-in packs, entry-point plugins, then extra packs; codes and names must be unique.

    The built-in packs come compiled from ``_compiled_rules`` when it is current (nothing is
    parsed, checked or read from a cache); otherwise, and always for plugin and extra packs
    (from the linted repository: untrusted, and never cached), they are compiled in this run.
    """
    shipped = shipped_module()
    checks = builtin_checks(shipped)
    pack_paths: list[Path] = []
    if plugins:
        for name, ep in _entry_point_plugins():
            try:
                provided = ep.load()()
            except Exception as exc:  # a broken plugin must not take the linter down
                raise RulePackError(
                    f"rule plugin {bounded_repr(name)} failed to load: {bounded_str(str(exc))}"
                ) from None
            for check_name, check in (provided.get("checks") or {}).items():
                checks[str(check_name)] = check
            pack_paths.extend(Path(p) for p in provided.get("packs") or ())
    pack_paths.extend(Path(p) for p in extra_packs)
    if shipped is not None:
        builtin = list(shipped.rules())
    else:
        builtin = compile_packs(sorted(builtin_rules_dir().glob("*.yaml")), checks)
    rules = compile_packs(pack_paths, checks, builtin, bounded=True) if pack_paths else builtin
    return Catalogue(
        rules,
        {r.code: r for r in rules},
        {r.name: r for r in rules},
        checks,
        frozenset(r.code for r in builtin),
    )


@cache
def shipped_catalogue() -> Catalogue:
    """The catalogue of the shipped packs and installed plugins, loaded once per process: none
    of it changes while the process runs (the API and the planner lint many documents with it;
    a repository's own packs are loaded per call with ``load_catalogue(extra_packs=...)``)."""
    return load_catalogue()


def compile_packs(
    pack_paths: list[Path],
    checks: dict[str, PythonCheck],
    compiled: Iterable[Rule] = (),
    bounded: bool = False,
) -> list[Rule]:
    """``compiled`` rules plus every pack, validated; codes and names unique across all.
    ``bounded``: the packs come from outside moe-lint (plugins, ``--rules``, pyproject) and
    share ``bounds.MAX_PACK_BYTES``, ``bounds.MAX_PACK_RULES`` and ``bounds.MAX_PACK_NODES``."""
    rules: list[Rule] = list(compiled)
    by_code: dict[str, Rule] = {r.code: r for r in rules}
    by_name: dict[str, Rule] = {r.name: r for r in rules}
    budget = [MAX_PACK_BYTES, MAX_PACK_RULES, MAX_PACK_NODES] if bounded else None
    for path in pack_paths:
        for rule in load_pack(path, checks, budget):
            if rule.code in by_code:
                raise RulePackError(f"{path}: rule code {rule.code} is defined twice")
            if rule.name in by_name:
                raise RulePackError(f"{path}: rule name {rule.name} is defined twice")
            by_code[rule.code] = rule
            by_name[rule.name] = rule
            rules.append(rule)
    for rule in rules:
        unknown = [c for c in rule.implied_by if c not in by_code]
        if unknown:
            raise RulePackError(f"rule {rule.code}: implied_by names unknown codes {unknown}")
    rules.sort(key=lambda r: r.code)
    return rules
