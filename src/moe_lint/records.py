"""``@record``: a dataclass whose methods were written at build time, not at start-up.

Why: ``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and, when
frozen, ``__hash__``, ``__setattr__``, ``__delattr__``) as source text and compiles it with
``exec`` while the module imports. The ~40 classes a ``moe-lint check`` run defines cost
15-35 ms of that, plus ~10 ms for importing ``dataclasses`` itself (it imports ``inspect``,
``ast``, ``dis``, ``tokenize``): a third of a pre-commit run on a short file. Here the same
methods live in :mod:`moe_lint._record_methods`, written by ``tools/records.py`` from these
declarations, so Python loads them from its bytecode cache like any other function.

A class declares itself exactly as a dataclass would (``@record`` or ``@record(frozen=True)``,
annotated fields, defaults, ``field(default_factory=..., repr=False, compare=False)``) and gets
the same behaviour as ``@dataclass`` with those options: the same ``__init__`` signature,
repr, equality, hashing, frozen errors (``dataclasses.FrozenInstanceError``) and
``__match_args__``. ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work
on it too: its ``__dataclass_fields__`` is built, through a real ``@dataclass`` twin of the
declaration, the first time something asks (``dataclasses`` is imported only then).

The generated methods are used only when the declaration is the one they were written from
(field names, annotations, kinds of default, flags, options; compared on every class
creation). Otherwise -- a class edited without re-running ``tools/records.py``, or a feature
the generator does not write (inheritance from a dataclass, ``ClassVar``, ``InitVar``,
``kw_only``, slots, an own ``__init__``...) -- the class is handed to ``@dataclass`` itself,
which is always right, only slower. ``tests/test_records.py`` fails when any class takes that
road, when the generated file is stale, or when a record behaves unlike its dataclass twin.

``NamedTuple`` here is typing's for type checkers and, at run time, a stand-in that skips
typing's per-annotation ``ForwardRef`` compiling (see below).
"""

from __future__ import annotations

import collections
import functools
import typing
from _thread import get_ident
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload

if TYPE_CHECKING:
    from collections.abc import Callable

_T = TypeVar("_T")


class _Missing:
    """No default: the sentinel ``field()`` leaves in ``default`` and ``default_factory``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """What :func:`field` returns: a field's default or factory and its repr/compare flags."""

    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


@overload
def field(*, default: _T, repr: bool = True, compare: bool = True) -> _T: ...
@overload
def field(*, default_factory: Callable[[], _T], repr: bool = True, compare: bool = True) -> _T: ...
@overload
def field(*, repr: bool = True, compare: bool = True) -> Any: ...
def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """``dataclasses.field`` for a record: the options the generator writes methods for."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr, compare)


#: One field of a declaration as the generator and the start-up check see it:
#: (name, annotation text, kind: "-" no default / "d" default / "f" factory, repr, compare).
FieldSpec = tuple[str, str, str, bool, bool]
#: A whole declaration: (frozen, fields, the dunder methods the class body defines itself).
Spec = tuple[bool, tuple[FieldSpec, ...], tuple[str, ...]]

#: Every record class defined so far, by "module.qualname" (what tools/records.py writes for).
DECLARED: dict[str, type] = {}
#: The records that took the slow road (``@dataclass`` itself), with the reason.
SLOW: dict[str, str] = {}

_OWN_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
_FEATURES_NOT_WRITTEN = ("ClassVar", "InitVar", "KW_ONLY")


def declaration(cls: type, frozen: bool) -> tuple[Spec, tuple[Any, ...]] | None:
    """The class's :data:`Spec` and, per field with one, its default or factory, in field
    order; ``None`` for a declaration the generator does not write methods for."""
    body = cls.__dict__
    if "__slots__" in body or "__post_init__" in body or body.get("__doc__") is None:
        return None
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__:
            return None
    own = tuple(name for name in _OWN_METHODS if name in body)
    if "__init__" in own or (frozen and ("__setattr__" in own or "__delattr__" in own)):
        return None
    fields: list[FieldSpec] = []
    values: list[Any] = []
    annotations = body.get("__annotations__", {})
    for name, annotation in annotations.items():
        if not isinstance(annotation, str) or any(w in annotation for w in _FEATURES_NOT_WRITTEN):
            return None
        value = body.get(name, MISSING)
        repr_, compare = True, True
        if isinstance(value, Field):
            repr_, compare = value.repr, value.compare
            if value.default_factory is not MISSING:
                kind, value = "f", value.default_factory
            else:
                kind, value = ("-", None) if value.default is MISSING else ("d", value.default)
        else:
            kind = "-" if value is MISSING else "d"
        fields.append((name, annotation, kind, repr_, compare))
        if kind != "-":
            values.append(value)
    for name, value in body.items():
        if isinstance(value, Field) and name not in annotations:
            return None  # dataclasses raises for it: let it
    return (frozen, tuple(fields), own), tuple(values)


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...
@dataclass_transform(field_specifiers=(field, Field))
def record(cls: type[_T] | None = None, /, *, frozen: bool = False) -> Any:
    """``@dataclass`` / ``@dataclass(frozen=True)``, with the methods written at build time."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _build(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[_T], frozen: bool) -> type[_T]:
    key = f"{cls.__module__}.{cls.__qualname__}"
    DECLARED[key] = cls
    found = declaration(cls, frozen)
    if found is None:
        SLOW[key] = "a declaration tools/records.py does not write methods for"
        return _as_dataclass(cls, frozen)
    spec, values = found
    cls.__record__ = found  # type: ignore[attr-defined]
    try:
        # Lazy: the generated methods import only once the first record is declared.
        from moe_lint._record_methods import METHODS
    except ImportError:  # a missing or broken generated file: every record takes the slow road
        METHODS = {}
    written: tuple[Spec, Callable[..., Any]] | None = METHODS.get(key)
    if written is None or written[0] != spec:
        SLOW[key] = "no methods written for this declaration: run python tools/records.py"
        return _as_dataclass(cls, frozen)
    return _attach(cls, spec, values, written[1])


def _attach(
    cls: type[_T], spec: Spec, values: tuple[Any, ...], write: Callable[..., Any]
) -> type[_T]:
    """Give ``cls`` what ``dataclasses._process_class`` would, from the generated methods."""
    frozen, fields, own = spec
    for name, _, kind, _, _ in fields:
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            if kind == "d":
                setattr(cls, name, value.default)
            else:
                delattr(cls, name)
    for method in write(cls, *values):
        name = method.__name__
        if name in own:
            continue
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        if name == "__init__":
            method.__annotations__ = {f[0]: f[1] for f in fields}
            method.__annotations__["return"] = None
        elif name == "__repr__":
            method = _recursive_repr(method)
        setattr(cls, name, method)
    explicit_hash = "__hash__" in own and not (cls.__dict__["__hash__"] is None and "__eq__" in own)
    if not frozen and not explicit_hash:
        cls.__hash__ = None  # type: ignore[assignment]  # eq without frozen: unhashable, as dataclasses
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f[0] for f in fields)  # type: ignore[attr-defined, misc]
    for name in ("__dataclass_fields__", "__dataclass_params__"):
        setattr(cls, name, _DataclassFacts(name))
    return cls


def _recursive_repr(user_function: Callable[[Any], str]) -> Callable[[Any], str]:
    """``dataclasses._recursive_repr``: "..." for a record met again inside its own repr."""
    running: set[tuple[int, int]] = set()

    @functools.wraps(user_function)
    def wrapper(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            return user_function(self)
        finally:
            running.discard(key)

    return wrapper


class _DataclassFacts:
    """``__dataclass_fields__`` / ``__dataclass_params__`` of a record, built on first use.

    A non-data descriptor in the class: reading either name on the class or an instance
    builds the :func:`twin`, writes the twin's two real attributes over this one and returns
    the one asked for, so ``dataclasses`` is imported only by a caller that needs it.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type) -> Any:
        # The record itself, also when read through a plain subclass of it.
        declared = next(c for c in owner.__mro__ if c.__dict__.get(self.name) is self)
        real = twin(declared)
        for name in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(declared, name, real.__dict__[name])
        return declared.__dict__[self.name]


def twin(cls: type) -> type:
    """The real ``@dataclass`` a record stands for, made from the same declaration (for
    ``dataclasses.fields()`` & co., the tests and the generator)."""
    facts = cls.__dict__.get("__record__")
    if facts is None:
        raise TypeError(f"{cls.__qualname__} is not a record with generated methods")
    (frozen, fields, _), values = facts
    body: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "__annotations__": {name: annotation for name, annotation, *_ in fields},
    }
    given = iter(values)
    for name, _, kind, repr_, compare in fields:
        default = next(given) if kind == "d" else MISSING
        factory = next(given) if kind == "f" else MISSING
        if kind != "-" or not (repr_ and compare):
            body[name] = Field(default, factory, repr_, compare)
    return _as_dataclass(type(cls.__name__, (), body), frozen)


def _as_dataclass(cls: type[_T], frozen: bool) -> type[_T]:
    """``@dataclass`` itself, with :func:`field` specs turned into its own: the slow road of
    a declaration without generated methods, and a record's :func:`twin`."""
    # Lazy: only the slow road and a caller of dataclasses.fields() & co. need dataclasses.
    import dataclasses

    for name, value in list(cls.__dict__.items()):
        if isinstance(value, Field):
            options: dict[str, Any] = {"repr": value.repr, "compare": value.compare}
            if value.default is not MISSING:
                options["default"] = value.default
            if value.default_factory is not MISSING:
                options["default_factory"] = value.default_factory
            setattr(cls, name, dataclasses.field(**options))
    return dataclasses.dataclass(frozen=frozen)(cls)


def replace(obj: _T, /, **changes: Any) -> _T:
    """``dataclasses.replace`` for a record (or any dataclass) without importing
    ``dataclasses`` for a record: a new instance with ``changes`` over its fields."""
    cls = type(obj)
    facts = cls.__dict__.get("__record__")
    if facts is None:
        # Lazy: a plain dataclass (not a record) is replaced by dataclasses itself.
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for name, *_ in facts[0][1]:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return cls(**changes)


def field_types(cls: type) -> dict[str, str]:
    """A record's field names and annotation texts, in order (``dataclasses.fields`` without
    ``dataclasses``)."""
    facts = cls.__dict__.get("__record__")
    if facts is None:
        # Lazy: a plain dataclass (not a record) is read by dataclasses itself.
        import dataclasses

        return {f.name: str(f.type) for f in dataclasses.fields(cls)}
    return {name: annotation for name, annotation, *_ in facts[0][1]}


# --- NamedTuple -------------------------------------------------------------------------------
#
# ``class Span(NamedTuple)`` costs 0.2-0.3 ms per class at import in typing.NamedTupleMeta
# (~3.5 ms for the ~17 a check run defines): besides ``collections.namedtuple`` itself it turns
# every annotation (a string under ``from __future__ import annotations``) into a
# ``typing.ForwardRef``, compiling each one, to check that it names a type. This stand-in makes
# the same class with ``collections.namedtuple`` and keeps the annotations as written (strings,
# which ``typing.get_type_hints`` resolves the same way); type checkers see typing's own.
# tests/test_records.py compares every such class with what typing makes of it.

#: typing.NamedTupleMeta's own lists (Python 3.11-3.13): names a class body may not set, and
#: names it sets that are not copied onto the class.
_PROHIBITED = frozenset(
    {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
     "_make", "_replace", "_asdict", "_source"}
)  # fmt: skip
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})


class _NamedTupleMeta(type):
    def __new__(mcls, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if not bases:  # _NamedTupleBase itself
            return super().__new__(mcls, typename, bases, ns)
        if bases != (_NamedTupleBase,):  # Generic & co.: typing's own machinery
            return typing.NamedTupleMeta(typename, (typing._NamedTuple,), ns)  # type: ignore[attr-defined]
        annotations = ns.get("__annotations__", {})
        default_names: list[str] = []
        for name in annotations:
            if name in ns:
                default_names.append(name)
            elif default_names:  # typing.NamedTupleMeta's own message
                raise TypeError(
                    f"Non-default namedtuple field {name} cannot follow default field"
                    f"{'s' if len(default_names) > 1 else ''} {', '.join(default_names)}"
                )
        defaults = [ns[name] for name in default_names]
        fields = list(annotations)
        made = collections.namedtuple(typename, fields, defaults=defaults, module=ns["__module__"])  # type: ignore[misc]
        made.__annotations__ = made.__new__.__annotations__ = dict(annotations)
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _SPECIAL and key not in made._fields:
                setattr(made, key, value)
        return made


class _NamedTupleBase(metaclass=_NamedTupleMeta):
    """What ``class X(NamedTuple)`` really derives from (replaced by ``tuple``)."""

    __slots__ = ()


def _named_tuple(typename: str, fields: Any = None, /, **kwargs: Any) -> Any:
    """The functional form, ``NamedTuple("X", [("a", int)])``: typing's own."""
    return typing.NamedTuple(typename, fields, **kwargs)


_named_tuple.__mro_entries__ = lambda bases: (_NamedTupleBase,)  # type: ignore[attr-defined]

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    NamedTuple = _named_tuple
