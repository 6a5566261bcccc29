"""The key walk behind SCH001 / SCH005 (checks in schema.py): keys Bridge does not know.

Bridge applies an override file key by key and skips a key the section's object lacks
(``training/utils/omegaconf_utils.py::_apply_overrides``: ``hasattr``, then "Key '…' in
overrides not found in config object … Skipping."); ``ConfigContainer.from_yaml`` drops
keywords a ``_target_`` class does not take (``megatron/training/config/instantiate_utils.py::
_filter_kwargs_for_target``, LENIENT mode). Which keys exist depends on the section's class and
on the release, so the walk asks :mod:`moe_lint.config.bridge_classes`:

* a section (or nested mapping) with a ``_target_`` is checked against that class;
* without one (override files) the recipe decides the class, so a key is unknown only when no
  class the section can hold has it (``--model`` narrows ``model`` to the preset's provider);
* ``extra-fields`` in ``[tool.moe-lint]`` (and ``per-file``) adds keys for private providers
  and forks;
* a key no known class has, under a ``_target_`` class the class table does not know, or for a
  stated version outside the recorded releases, is only reported at info (SCH005): moe-lint
  cannot tell whether Bridge keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import MAX_SUGGESTIONS
from moe_lint.config import bridge_classes
from moe_lint.config.settings import model_entry
from moe_lint.config.suggest import closest, home_order
from moe_lint.records import record

if TYPE_CHECKING:
    from moe_lint.config.bridge_classes import Choice, View
    from moe_lint.engine.evaluate import Context

#: Keys next to ``_target_`` that mark an object reference (dtype, function, partial, enum).
_MARKERS = frozenset({"_call_", "_partial_", "_args_", "_name_"})


#: Where a user most likely meant a misplaced key to go (model fields are often mirrored into
#: other sections by Bridge, e.g. dataset.context_parallel_size is filled in from the model).
@record
class KeyProblem:
    """A key Bridge would skip or moe-lint cannot place: where it is, and what to say."""

    path: str
    key: str
    #: SCH001 (Bridge skips it) when True; SCH005 (cannot tell) when False.
    certain: bool
    text: str


#: "Did you mean" answers by (key, the names searched), for the process: a difflib pass over
#: a section's hundreds of field names costs about a millisecond, and a batch of configs
#: copied from one another repeats the same unknown keys in the same sections. Only keys of
#: up to _MEMO_KEY_CHARS characters are kept, and at most _CLOSEST_MAX answers.
_CLOSEST: dict[tuple[str, frozenset[str]], str | None] = {}
_CLOSEST_MAX = 1024
_MEMO_KEY_CHARS = 128


def _is_object_ref(value: dict[Any, Any]) -> bool:
    return "_target_" in value and bool(_MARKERS & set(value))


def _short(qualname: str) -> str:
    return qualname.rpartition(".")[2]


class KeyWalk:
    """One file's walk over its keys (shared by SCH001 and SCH005)."""

    def __init__(self, ctx: Context) -> None:
        settings = ctx.settings
        versions = dict(settings.versions) if settings is not None else {}
        self.bridge, self.mcore = bridge_classes.choose(versions)
        self.view = _active_view(self.bridge, self.mcore, settings)
        #: The installed Bridge version when its classes were read (introspect-bridge).
        self.installed: str | None = getattr(self.view, "version", None) or None
        self.extra = set(settings.extra_fields) if settings is not None else set()
        self.preset = ctx.config.preset
        self.problems: list[KeyProblem] = []
        self._unions: dict[str, frozenset[str]] = {}
        #: "did you mean" searches left (bounds.MAX_SUGGESTIONS): each costs a difflib pass
        #: over hundreds of field names, so thousands of unknown keys cost seconds.
        self.suggestions_left = MAX_SUGGESTIONS
        #: (package, path, classes, exact) -> [(release index, field names)], for _drift.
        self._drift_names: dict[tuple[Any, ...], list[tuple[int, frozenset[str]]]] = {}
        self._drift_any: dict[tuple[Any, ...], frozenset[str]] = {}
        self._by_field: dict[str, list[str]] | None = None

    # ------------------------------------------------------------------ classes
    def section_classes(self, view: View, section: str) -> list[str]:
        classes = view.section_classes(section)
        if section == "model" and self.preset:
            narrowed = _preset_classes(view, self.preset)
            if narrowed:
                return narrowed
        return classes

    def path_classes(self, view: View, parts: list[str]) -> list[str]:
        """The classes a dotted section path can hold (override-file reading)."""
        classes = self.section_classes(view, parts[0])
        for part in parts[1:]:
            classes = view.expand(r for c in classes for r in view.nested(c, part))
        return classes

    def section_union(self, section: str) -> frozenset[str]:
        if section not in self._unions:
            self._unions[section] = self.view.union(self.section_classes(self.view, section))
        return self._unions[section]

    # ------------------------------------------------------------------ walk
    def run(self, raw: dict[str, Any]) -> list[KeyProblem]:
        view = self.view
        container = view.container()
        top = set(view.names(container) or ())
        for key, value in raw.items():
            name = str(key)
            if name == "_target_":
                continue
            if name not in top:
                if self._extra(name):
                    continue
                guess = self.closest(name, top) or ("dataset" if name == "data" else None)
                hint = f"did you mean '{guess}'?" if guess else "not a ConfigContainer section"
                self._unknown(name, name, hint, None)
                continue
            if not isinstance(value, dict) or _is_object_ref(value):
                continue
            target = value.get("_target_")
            if isinstance(target, str) and view.knows(target):
                self.walk(value, name, [target], None, exact=True)
                continue
            classes = self.section_classes(view, name)
            if classes and not view.admits_mapping(container, name):
                self.walk(value, name, classes, target if isinstance(target, str) else None)
        return self.problems

    def _extra(self, dotted: str) -> bool:
        """A declared extra field, or a mapping that holds one (``a`` for ``a.b``)."""
        return dotted in self.extra or any(e.startswith(dotted + ".") for e in self.extra)

    def walk(
        self,
        node: dict[Any, Any],
        path: str,
        classes: list[str],
        unknown_target: str | None,
        exact: bool = False,
    ) -> None:
        view = self.view
        names = view.union(classes)
        for key, value in node.items():
            name = str(key)
            if name == "_target_":
                continue
            if name not in names:
                dotted = f"{path}.{name}"
                if not self._extra(dotted):
                    self._unknown_field(dotted, path, name, names, classes, unknown_target, exact)
                continue
            if not isinstance(value, dict) or _is_object_ref(value):
                continue
            dotted = f"{path}.{name}"
            if any(view.admits_mapping(c, name) for c in classes):
                continue
            target = value.get("_target_")
            if isinstance(target, str) and view.knows(target):
                self.walk(value, dotted, [target], None, exact=True)
                continue
            sub = view.expand(r for c in classes for r in view.nested(c, name))
            if sub:
                self.walk(value, dotted, sub, target if isinstance(target, str) else None)

    # ------------------------------------------------------------------ findings
    def _unknown(self, dotted: str, key: str, hint: str, reason: str | None) -> None:
        if reason is not None:
            self.problems.append(KeyProblem(dotted, key, False, reason))
        else:
            self.problems.append(KeyProblem(dotted, key, True, hint))

    def _releases(self) -> str:
        if self.installed:
            return f"the installed Bridge {self.installed}"
        return f"{self.bridge.describe('bridge')} / {self.mcore.describe('megatron-core')}"

    def _unknown_field(
        self,
        dotted: str,
        path: str,
        key: str,
        names: frozenset[str],
        classes: list[str],
        unknown_target: str | None,
        exact: bool,
    ) -> None:
        if unknown_target is not None:
            reason = (
                f"its _target_ {unknown_target} is not a class moe-lint knows for "
                f"{self._releases()}; Bridge skips the key only if that class lacks it"
            )
            self._unknown(dotted, key, "", reason)
            return
        outside = [c for c in (self.bridge, self.mcore) if c.outside]
        if outside and not self.installed:
            reason = (
                f"not a field moe-lint knows here, but you target {self._releases()}; "
                f"Bridge skips it unless your release has it"
            )
            self._unknown(dotted, key, "", reason)
            return
        subject = f"{_short(classes[0])}" if exact and len(classes) == 1 else f"'{path}'"
        # A key another release has is most likely that release's field, not a typo.
        drift = self._drift(path, key, classes, exact)
        guess = None if drift else self.closest(key, names)
        elsewhere = None if drift or guess else self._elsewhere(path, key)
        if drift:
            hint = f"{subject} has no such field in {drift}"
        elif guess:
            hint = f"did you mean '{path}.{guess}'?"
        elif elsewhere:
            hint = f"it belongs under '{elsewhere}', not '{path}'"
        else:
            hint = f"{subject} has no such field"
        self._unknown(dotted, key, hint, None)

    def _sections_with(self) -> dict[str, list[str]]:
        """Field name -> the sections (sorted) whose classes have it; built once a file."""
        if self._by_field is None:
            self._by_field = {}
            for section in sorted(self.view.names(self.view.container()) or ()):
                for name in self.section_union(section):
                    self._by_field.setdefault(name, []).append(section)
        return self._by_field

    def closest(self, key: str, names: Iterable[str]) -> str | None:
        if self.suggestions_left <= 0:
            return None
        self.suggestions_left -= 1
        pool = names if isinstance(names, frozenset) else frozenset(names)
        if len(key) > _MEMO_KEY_CHARS:
            return closest(key, sorted(pool))
        memo_key = (key, pool)
        if memo_key in _CLOSEST:
            return _CLOSEST[memo_key]
        if len(_CLOSEST) >= _CLOSEST_MAX:
            _CLOSEST.clear()
        found = _CLOSEST[memo_key] = closest(key, sorted(pool))
        return found

    def _elsewhere(self, path: str, key: str) -> str | None:
        if "." in path:
            return None
        sections = [s for s in self._sections_with().get(key, ()) if s != path]
        sections.sort(key=home_order)
        return sections[0] if sections else None

    def _drift(self, path: str, key: str, classes: list[str], exact: bool) -> str | None:
        """ "Bridge 0.3.1 (added by 0.4.2)" when another recorded release has the key."""
        if self.installed:
            return None
        for package, choice in (("bridge", self.bridge), ("megatron-core", self.mcore)):
            names_by_release = self._release_names(package, path, classes, exact)
            if key not in self._drift_any[(package, path, tuple(classes), exact)]:
                continue  # no other release has it (the common case: a cheap test)

            known = bridge_classes.releases(package)
            here = known.index(choice.release)
            having = [index for index, names in names_by_release if key in names]
            name = bridge_classes.DISPLAY[package]
            newer = [i for i in having if i > here]
            older = [i for i in having if i < here]
            if newer:
                return f"{name} {choice.release} (added by {known[newer[0]]})"
            if older:
                return f"{name} {choice.release} (removed after {known[older[-1]]})"
        return None

    def _release_names(
        self, package: str, path: str, classes: list[str], exact: bool
    ) -> list[tuple[int, frozenset[str]]]:
        """The field names ``path`` holds in each other recorded release of ``package``,
        computed once per path (not once per unknown key)."""
        cache_key = (package, path, tuple(classes), exact)
        cached = self._drift_names.get(cache_key)
        if cached is not None:
            return cached

        choice = self.bridge if package == "bridge" else self.mcore
        known = bridge_classes.releases(package)
        here = known.index(choice.release)
        parts = path.split(".")
        out: list[tuple[int, frozenset[str]]] = []
        for index, release in enumerate(known):
            if index == here:
                continue
            if package == "bridge":
                other = bridge_classes.view(release, self.mcore.release)
            else:
                other = bridge_classes.view(self.bridge.release, release)
            if exact and len(classes) == 1 and other.knows(classes[0]):
                alt = classes
            else:
                alt = self.path_classes(other, parts)
            out.append((index, other.union(alt)))
        self._drift_names[cache_key] = out
        self._drift_any[cache_key] = frozenset().union(*(names for _, names in out))
        return out


def _preset_classes(view: View, preset: str) -> list[str]:
    """The model classes a preset's recipe can build (models.yaml ``bridge: XBridge -> Cls``).

    The named provider class itself (not its subclasses: GPTModelProvider's include every VLM
    provider) plus the providers of the bridge's model-family package with their subclasses
    (older releases had per-family ones: DeepSeekV3ModelProvider, GPTOSSProvider with its
    yarn_* fields, ...). Empty when the preset names no bridge: no narrowing.
    """
    entry = model_entry(preset)  # a preset, or an HF config.json (its bridge, hf_config.py)
    text = str(entry.get("bridge") or "")
    if "->" not in text:
        return []
    bridge_name, _, rest = text.partition("->")
    provider = rest.split()[0].strip() if rest.split() else ""
    classes = view.find(provider, "megatron.bridge.models.")
    if not classes:
        return []
    family = bridge_classes.data()["packages"]["bridge"]["families"].get(bridge_name.strip())
    if family:
        members = [c for c in view.section_classes("model") if c.startswith(family + ".")]
        classes += [c for c in view.expand(members) if c not in classes]
    return classes


def _active_view(bridge: Choice, mcore: Choice, settings: Any) -> View:
    if settings is not None and getattr(settings, "introspect_bridge", False):
        # Lazy: Bridge introspection (imports torch) is opt-in.
        from moe_lint.config import bridge_introspect

        installed = bridge_introspect.installed_view(bridge, mcore)
        if installed is not None:
            return installed
    return bridge_classes.view(bridge.release, mcore.release)


def key_problems(ctx: Context) -> list[KeyProblem]:
    """Every unknown key of the file (computed once per file, shared by both rules)."""
    cached = getattr(ctx, "_key_problems", None)
    if cached is not None:
        return list(cached)
    raw: Any = ctx.config.doc.data
    for part in ctx.config.root:
        raw = raw[part]
    problems = KeyWalk(ctx).run(raw) if isinstance(raw, dict) else []
    ctx._key_problems = problems  # type: ignore[attr-defined]
    return list(problems)
