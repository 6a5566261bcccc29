"""``@record`` classes behave exactly as ``@dataclass`` would, and never take the slow road.

``moe_lint.records`` attaches methods written at build time (``tools/records.py``) instead of
compiling them at start-up. What could go wrong: a stale generated file (the class silently
becomes a plain ``@dataclass``: right, but the start-up cost is back), or generated methods
that differ from ``dataclasses``' own. The probe below describes every record class of the
package -- fields as ``dataclasses.fields`` sees them, signature, class defaults, repr,
equality, hashing, frozen errors, ``replace``, ``asdict``, pickling -- once as moe-lint
defines them and once with every ``@record`` handed to ``@dataclass`` itself, in fresh
interpreters, and the two descriptions must be equal.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any, ClassVar

import pytest

from conftest import REPO, assert_tool_current
from moe_lint import records

#: What both probes use: a hashable, comparable stand-in for a field value, and a call's
#: outcome (its repr, or the exception's class and message).
SHARED = r"""
class Probe:
    def __init__(self, i):
        self.i = i
    def __repr__(self):
        return f"Probe({self.i})"
    def __eq__(self, other):
        return isinstance(other, Probe) and other.i == self.i
    def __hash__(self):
        return hash(self.i)


def outcome(call):
    try:
        return ["ok", repr(call())]
    except Exception as exc:
        return [type(exc).__module__ + "." + type(exc).__qualname__, str(exc)]
"""

PROBE = r"""
import dataclasses, inspect, json, pickle, sys
sys.path.insert(0, "tools")
import moe_lint
from moe_lint import records

if sys.argv[1] == "dataclasses":
    def as_dataclass(cls, frozen):
        records.DECLARED[f"{cls.__module__}.{cls.__qualname__}"] = cls
        return records._as_dataclass(cls, frozen)
    records._build = as_dataclass

#SHARED


def show(value):
    if value is dataclasses.MISSING:
        return "MISSING"
    return getattr(value, "__qualname__", None) or repr(value)


def describe(cls):
    fields = dataclasses.fields(cls)
    params = cls.__dataclass_params__
    out = {
        "is_dataclass": dataclasses.is_dataclass(cls),
        "params": [params.init, params.repr, params.eq, params.order, params.unsafe_hash,
                   params.frozen],
        "fields": [[f.name, str(f.type), show(f.default), show(f.default_factory), f.init,
                    f.repr, f.compare, f.hash, f.kw_only] for f in fields],
        "signature": str(inspect.signature(cls)),
        "init_annotations": {k: repr(v) for k, v in cls.__init__.__annotations__.items()},
        "match_args": list(cls.__match_args__),
        "hash_is_none": cls.__hash__ is None,
        "class_defaults": [[f.name, outcome(lambda: getattr(cls, f.name))] for f in fields],
        "qualnames": [getattr(cls, m).__qualname__ for m in ("__init__", "__repr__", "__eq__")],
        "doc": cls.__doc__,
    }
    required = [f.name for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    args = {name: Probe(i) for i, name in enumerate(required)}
    one, same = cls(**args), cls(**args)
    out["repr"] = repr(one)
    out["eq_same"] = one == same
    out["eq_other_type"] = repr(one.__eq__(object()))
    for f in fields:
        changed = dataclasses.replace(one, **{f.name: Probe(99)})
        out["eq_changed_" + f.name] = one == changed
        out["replace_" + f.name] = repr(changed)
        out["records_replace_" + f.name] = repr(records.replace(one, **{f.name: Probe(99)}))
        out["setattr_" + f.name] = outcome(lambda: setattr(one, f.name, getattr(one, f.name)))
    out["hash"] = outcome(lambda: hash(one) == hash(same))
    out["setattr_new"] = outcome(lambda: setattr(one, "not_a_field", 1))
    out["delattr"] = outcome(lambda: delattr(one, fields[0].name)) if fields else None
    out["asdict"] = outcome(lambda: dataclasses.asdict(cls(**args)))
    out["pickle"] = outcome(lambda: pickle.loads(pickle.dumps(cls(**args))) == cls(**args))
    out["field_types"] = records.field_types(cls)
    return out


from records import load_all  # tools/records.py: imports every module of the package
declared = load_all()
print(json.dumps({"slow": sorted(records.SLOW),
                  "classes": {key: describe(cls) for key, cls in declared.items()}}))
"""

TUPLES = r"""
import inspect, json, pickle, sys, typing
from moe_lint import records

if sys.argv[1] == "typing":
    records.NamedTuple = typing.NamedTuple
sys.path.insert(0, "tools")
from records import load_all  # tools/records.py: imports every module of the package
load_all()

#SHARED


def written(annotation):
    return annotation.__forward_arg__ if isinstance(annotation, typing.ForwardRef) else annotation


def describe(cls):
    required = [n for n in cls._fields if n not in cls._field_defaults]
    one = cls(*[Probe(i) for i in range(len(required))])
    return {
        "mro": [c.__qualname__ for c in cls.__mro__],
        "orig_bases": [getattr(b, "__qualname__", repr(b)) for b in cls.__orig_bases__],
        "fields": list(cls._fields),
        "defaults": {k: repr(v) for k, v in cls._field_defaults.items()},
        "doc": cls.__doc__,
        "attributes": sorted(vars(cls)),
        "annotations": {k: written(v) for k, v in cls.__annotations__.items()},
        "new_annotations": {k: written(v) for k, v in cls.__new__.__annotations__.items()},
        "signature": [[p.name, written(p.annotation), repr(p.default), p.kind.name]
                      for p in inspect.signature(cls).parameters.values()],
        "qualnames": [getattr(cls, m).__qualname__ for m in ("__new__", "__repr__", "_replace")],
        "own": {k: getattr(v, "__qualname__", type(v).__name__) for k, v in vars(cls).items()
                if k not in ("__doc__", "__module__", "__orig_bases__") and not k.startswith("_")},
        "repr": repr(one),
        "asdict": repr(one._asdict()),
        "replace": outcome(lambda: one._replace(**{cls._fields[0]: Probe(9)})),
        "tuple": repr(tuple(one)),
        "hash": outcome(lambda: hash(one) == hash(cls(*one))),
        "pickle": outcome(lambda: pickle.loads(pickle.dumps(one)) == one),
        "match_args": list(cls.__match_args__),
        "hints": outcome(lambda: typing.get_type_hints(cls)),
    }


found = {}
for name, module in sorted(sys.modules.items()):
    if name.startswith("moe_lint"):
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
                    and value.__module__ == name and hasattr(value, "__orig_bases__")):
                found[f"{name}.{value.__qualname__}"] = value
print(json.dumps({key: describe(cls) for key, cls in found.items()}))
"""


def _describe(mode: str, probe: str = PROBE) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", probe.replace("#SHARED\n", SHARED), mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_every_record_behaves_as_its_dataclass_and_none_takes_the_slow_road() -> None:
    written, real = _describe("records"), _describe("dataclasses")
    assert written["slow"] == []  # stale methods: run python tools/records.py
    assert len(written["classes"]) >= 40
    assert written["classes"].keys() == real["classes"].keys()
    for key, described in written["classes"].items():
        assert described == real["classes"][key], key


def test_every_named_tuple_is_the_class_typing_makes_of_it() -> None:
    """moe_lint.records.NamedTuple keeps annotations as written (typing wraps each string in a
    ForwardRef, compiling it, 0.2 ms a class); everything else must be typing's."""
    fast, real = _describe("records", TUPLES), _describe("typing", TUPLES)
    assert len(fast) >= 15 and fast.keys() == real.keys()
    for key, described in fast.items():
        if described["orig_bases"] == ["_named_tuple"]:
            described["orig_bases"] = ["NamedTuple"]  # the stand-in's own name
        assert described == real[key], key


def test_the_generated_methods_are_fresh() -> None:
    assert_tool_current("records.py")


def test_an_edited_record_falls_back_to_dataclass_and_says_so() -> None:
    @records.record(frozen=True)
    class Edited:
        """Declared here, so no generated methods match it."""

        a: int
        b: list[int] = records.field(default_factory=list)

    key = f"{Edited.__module__}.{Edited.__qualname__}"
    assert "tools/records.py" in records.SLOW.pop(key)
    assert dataclasses.is_dataclass(Edited) and Edited(1) == Edited(1, [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        Edited(1).a = 2  # type: ignore[misc]


@pytest.mark.parametrize("kind", ["classvar", "no-doc", "inherits"])
def test_a_declaration_the_generator_cannot_write_is_a_plain_dataclass(kind: str) -> None:
    if kind == "classvar":

        @records.record
        class Declared:
            """A ClassVar is not a field: dataclasses decides that, not the generator."""

            a: int
            shared: ClassVar[int] = 3

        assert [f.name for f in dataclasses.fields(Declared)] == ["a"]
    elif kind == "no-doc":

        @records.record
        class Declared:  # type: ignore[no-redef]
            a: int

        assert str(Declared.__doc__).startswith("Declared(a")  # dataclasses wrote it
    else:

        @records.record
        class Base:
            """A base record (declared here: it falls back too)."""

            a: int

        @records.record
        class Declared(Base):  # type: ignore[no-redef]
            """A record that inherits one: dataclasses merges the fields."""

            b: int = 0

        assert [f.name for f in dataclasses.fields(Declared)] == ["a", "b"]
        assert "tools/records.py" in records.SLOW.pop(f"{Base.__module__}.{Base.__qualname__}")
    key = f"{Declared.__module__}.{Declared.__qualname__}"
    assert records.SLOW.pop(key) == "a declaration tools/records.py does not write methods for"
