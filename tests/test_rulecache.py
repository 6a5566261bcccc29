"""No code from a cache: the shipped catalogue is compiled ahead of time, the rest is checked data.

Issue 10 ("the cache runs code"): the catalogue used to be unpickled from a per-user folder
without any owner or mode check, wrong entries never healed, and a pack edited keeping its size
and mtime kept its old rules. Now the shipped packs come from the generated module
``moe_lint.engine._compiled_rules`` (checked against the files on disk by content hash), packs from
a
linted repository are compiled per run, and the per-user folder holds JSON only, in a folder
only its user can write.
"""

from __future__ import annotations

import ast
import os
import pickle
import shutil
import stat
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from conftest import DUMPS, REPO, assert_tool_current
from moe_lint.config import user_cache as rulecache
from moe_lint.config.settings import Settings
from moe_lint.engine import catalogue
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.linting import lint_path

EXAMPLE = REPO / "examples" / "dsv3_128k_h100.yaml"
BROKEN = REPO / "examples" / "dsv3_128k_h100_broken.yaml"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOE_LINT", "XDG_"))}
    env["PYTHONPATH"] = str(REPO / "src")
    env.update(extra)
    return env


def _cli(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moe_lint", *args],
        env=env,
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


class _Touch:
    """Unpickling this creates the file ``path`` (what a planted payload would do)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


# ---- the shipped catalogue is generated, current, and equal to a compile ---------------------


def test_generated_module_is_current() -> None:
    assert_tool_current("compile_rules.py")


def test_checkout_serves_the_generated_module() -> None:
    shipped = catalogue.shipped_module()
    assert shipped is not None, "src/moe_lint/engine/_compiled_rules.py is stale"
    assert catalogue.shipped_hash() == shipped.SOURCE_HASH


def _strip(value: Any) -> Any:
    """A rule with its code objects replaced by a marker (they differ only in kind)."""
    if isinstance(value, types.CodeType):
        return "<code>"
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, *map(_strip, value))
    if isinstance(value, tuple | list):
        return tuple(map(_strip, value))
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()}
    return value


def _compiled_now() -> catalogue.Catalogue:
    from moe_lint.engine import checks

    index = checks.check_index()
    packs = sorted(catalogue.builtin_rules_dir().glob("*.yaml"))
    rules = catalogue.compile_packs(packs, catalogue.LazyChecks(index))
    by_code = {r.code: r for r in rules}
    by_name = {r.name: r for r in rules}
    return catalogue.Catalogue(rules, by_code, by_name, catalogue.LazyChecks(index))


def test_generated_rules_equal_a_fresh_compile() -> None:
    generated = load_catalogue(plugins=False)
    compiled = _compiled_now()
    assert [r.code for r in generated.rules] == [r.code for r in compiled.rules]
    for ours, fresh in zip(generated.rules, compiled.rules, strict=True):
        assert _strip(ours) == _strip(fresh), ours.code
    assert dict(generated.checks.index) == dict(compiled.checks.index)  # type: ignore[attr-defined]


def test_generated_code_evaluates_like_compiled_code() -> None:
    """Same findings, messages and fixes from both catalogues on the examples and the dumps."""
    generated = load_catalogue(plugins=False)
    compiled = _compiled_now()
    files = sorted(REPO.glob("examples/*.yaml")) + sorted(DUMPS.glob("*.yaml"))[:12]
    assert len(files) > 10
    fired = 0
    for path in files:
        results = []
        for cat in (generated, compiled):
            result = lint_path(str(path), cat, Settings(select=["ALL"]), [], {"gpus": "1024"})
            results.append(
                (
                    result.error,
                    [(f.code, f.line, f.message, f.fix, f.edits) for f in result.findings],
                )
            )
        assert results[0] == results[1], path.name
        fired += len(results[0][1])
    assert fired > 20  # the comparison saw real findings


def test_comprehensions_in_function_code_evaluate() -> None:
    """The generated form (a zero-argument function's code) runs against a rule namespace."""

    def probe() -> Any:
        return [x * y for x in range(3) for y in items if any(x < z for z in items)]  # noqa: F821

    namespace = {"__builtins__": {}, "range": range, "items": [1, 2], "any": any}
    assert eval(probe.__code__, namespace) == [0, 0, 1, 2]


def test_no_pickle_or_marshal_in_the_package() -> None:
    banned = {"pickle", "marshal", "shelve", "copyreg", "dill", "cloudpickle"}
    for path in (REPO / "src" / "moe_lint").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            else:
                continue
            assert not names & banned, f"{path.name} imports {names & banned}"


# ---- a stale or broken generated module is never served --------------------------------------


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of src/ and rules/ (a developer's checkout to edit)."""
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rules", root / "rules")
    return root


def _messages(root: Path, text: str, extra: list[str] | None = None) -> tuple[bool, str]:
    """(generated module used, concise output) for a lint in the copied checkout."""
    config = root / "c.yaml"
    config.write_text(text)
    probe = (
        "import sys; from moe_lint.engine import catalogue; from moe_lint.cli import main; "
        "print('SHIPPED', catalogue.shipped_module() is not None); "
        f"main([{str(config)!r}, '--format', 'concise', *sys.argv[1:]])"
    )
    env = _env(PYTHONPATH=str(root / "src"), MOE_LINT_CACHE_DIR=str(root / "cache"))
    proc = subprocess.run(
        [sys.executable, "-c", probe, *(extra or [])],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.stderr == "", proc.stderr
    first, _, rest = proc.stdout.partition("\n")
    return first == "SHIPPED True", rest


def _same_size_edit(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


GOOD_TEXT = EXAMPLE.read_text(encoding="utf-8")


@pytest.mark.slow
def test_shipped_pack_edited_keeping_size_and_mtime_gets_its_new_rules(checkout: Path) -> None:
    shipped, before = _messages(checkout, GOOD_TEXT)
    assert shipped and "no data-parallel headroom" in before  # PAR004's message
    pack = checkout / "rules" / "parallel.yaml"
    _same_size_edit(pack, "no data-parallel headroom", "NO DATA-PARALLEL HEADROOM")
    shipped, after = _messages(checkout, GOOD_TEXT)
    assert not shipped  # stale: the packs are compiled in this run instead
    assert "NO DATA-PARALLEL HEADROOM" in after and "no data-parallel headroom" not in after
    assert after == before.replace("no data-parallel headroom", "NO DATA-PARALLEL HEADROOM")


@pytest.mark.slow
def test_engine_edit_makes_the_module_stale(checkout: Path) -> None:
    expr = checkout / "src" / "moe_lint" / "engine" / "expr.py"
    expr.write_text(expr.read_text() + "\n# edited\n")
    shipped, out = _messages(checkout, GOOD_TEXT)
    assert not shipped and "PAR004" in out  # compiled per run, same findings


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    ["truncate", "syntax", "wrong-hash", "missing"],
)
def test_broken_generated_module_falls_back(checkout: Path, damage: str) -> None:
    module = checkout / "src" / "moe_lint" / "engine" / "_compiled_rules.py"
    _, expected = _messages(checkout, BROKEN.read_text())
    text = module.read_text()
    if damage == "truncate":
        module.write_text(text[: len(text) // 2])
    elif damage == "syntax":
        module.write_text(text + "\ndef (\n")
    elif damage == "wrong-hash":
        module.write_text(text.replace("SOURCE_HASH = '", "SOURCE_HASH = '0", 1))
    else:
        module.unlink()
    shipped, out = _messages(checkout, BROKEN.read_text())
    assert not shipped
    assert out == expected and "RCP003" in out  # every rule still there


# ---- repository packs: compiled per run, never cached ----------------------------------------

REPO_PACK = """\
rules:
  - code: XTR001
    name: extra-cp-check
    severity: warning
    summary: test rule
    path: model.context_parallel_size
    when: "cp >= 2"
    message: "{MSG}"
    source: test
    docs:
      what: w
      why: w
      example: "model:\\n  context_parallel_size: 2\\n"
      use_instead: "model:\\n  context_parallel_size: 1\\n"
"""


@pytest.mark.slow
def test_repo_pack_edited_keeping_size_and_mtime_gets_its_new_rules(tmp_path: Path) -> None:
    pack = tmp_path / "team.yaml"
    pack.write_text(REPO_PACK.replace("{MSG}", "old message AAAA"))
    config = tmp_path / "c.yaml"
    config.write_text("model:\n  context_parallel_size: 2\n")
    env = _env(MOE_LINT_CACHE_DIR=str(tmp_path / "cache"))
    args = (str(config), "--rules", str(pack), "--format", "concise", "--select", "XTR001")
    first = _cli(*args, env=env)
    assert "old message AAAA" in first.stdout, first.stderr
    _same_size_edit(pack, "old message AAAA", "new message BBBB")
    second = _cli(*args, env=env)
    assert "new message BBBB" in second.stdout and "old message" not in second.stdout
    assert not (tmp_path / "cache").exists()  # nothing was cached


# ---- the per-user folder: nothing written for a lint, planted files never run ----------------


@pytest.mark.slow
def test_cold_run_writes_no_cache_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _env(HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    for args in ((str(EXAMPLE),), (str(BROKEN), "--format", "sarif"), ("rules",)):
        proc = _cli(*args, env=env)
        assert proc.returncode in (0, 1), proc.stderr
    assert list(home.rglob("*")) == [] and not (tmp_path / "xdg").exists()
    env = _env(MOE_LINT_CACHE_DIR=str(tmp_path / "explicit"))
    assert _cli(str(EXAMPLE), env=env).returncode == 0
    assert not (tmp_path / "explicit").exists()


@pytest.mark.slow
def test_planted_files_never_execute(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Touch(marker))
    names = [
        "catalogue-0123456789abcdef0123456789abcdef.pickle",
        "entry-points-0123456789abcdef0123456789abcdef.json",
        "checks-0123456789abcdef0123456789abcdef.json",
        "bridge-classes-0123456789abcdef01234567.json",
    ]
    for name in names:
        (cache / name).write_bytes(payload)
    # Every name the old code could have computed: plant the payload under many keys too.
    for i in range(64):
        (cache / f"catalogue-{i:032x}.pickle").write_bytes(payload)
    reference = _cli(str(BROKEN), "--format", "concise", env=_env(MOE_LINT_NO_CACHE="1"))
    for env in (_env(MOE_LINT_CACHE_DIR=str(cache)), _env(XDG_CACHE_HOME=str(tmp_path))):
        for args in ((str(BROKEN), "--format", "concise"), ("rules", "--format", "json")):
            proc = _cli(*args, env=env)
            assert proc.returncode in (0, 1), proc.stderr
            assert proc.stderr == ""
            if args[0] == str(BROKEN):
                assert proc.stdout == reference.stdout
    assert not marker.exists()


def _use(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.delenv("MOE_LINT_NO_CACHE", raising=False)
    monkeypatch.setattr(rulecache, "_disabled", False)
    monkeypatch.setenv("MOE_LINT_CACHE_DIR", str(folder))


def test_json_entries_round_trip_and_heal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    _use(monkeypatch, folder)
    rulecache._store_json("bridge-classes-abc.json", {"a": 1})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert rulecache._load_json("bridge-classes-abc.json") == {"a": 1}
    for garbage in (b"not json", b"\xff\xfe", b"", pickle.dumps(_Touch(tmp_path / "x"))):
        (folder / "bridge-classes-abc.json").write_bytes(garbage)
        assert rulecache._load_json("bridge-classes-abc.json") is None
        rulecache._store_json("bridge-classes-abc.json", {"a": 2})  # the caller recomputes
        assert rulecache._load_json("bridge-classes-abc.json") == {"a": 2}
    assert not (tmp_path / "x").exists()


def test_wrong_shaped_bridge_overlay_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moe_lint.config import bridge_introspect as bi

    _use(monkeypatch, tmp_path / "cache")
    origin = tmp_path / "bridge" / "__init__.py"
    origin.parent.mkdir()
    origin.write_text("")
    good = {"megatron.bridge.X": {"r": 1, "f": {"1": "a b"}, "b": {"megatron.Y": 1}}}
    bi._store("0.6.2", str(origin), good)
    assert bi._cached("0.6.2", str(origin)) == good
    for bad in ([], {"X": []}, {"X": {"r": 1}}, {"X": {"r": 1, "f": {"1": 2}}}, {"X": {"zz": 1}}):
        bi._store("0.6.2", str(origin), bad)  # type: ignore[arg-type]
        assert bi._cached("0.6.2", str(origin)) is None
        bi._store("0.6.2", str(origin), good)  # recomputed and rewritten: healed
        assert bi._cached("0.6.2", str(origin)) == good


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722, 0o1777])
def test_group_or_world_writable_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    folder = tmp_path / "cache"
    _use(monkeypatch, folder)
    rulecache._store_json("bridge-classes-abc.json", {"a": 1})
    assert rulecache._load_json("bridge-classes-abc.json") == {"a": 1}
    folder.chmod(mode)
    assert rulecache._load_json("bridge-classes-abc.json") is None
    (folder / "bridge-classes-abc.json").unlink()
    rulecache._store_json("bridge-classes-abc.json", {"a": 2})
    assert list(folder.iterdir()) == []  # nothing written into a shared folder


def test_untrusted_entries_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    _use(monkeypatch, folder)
    rulecache._store_json("bridge-classes-abc.json", {"a": 1})
    entry = folder / "bridge-classes-abc.json"
    entry.chmod(0o666)  # writable by others: could have been replaced
    assert rulecache._load_json("bridge-classes-abc.json") is None
    entry.unlink()
    outside = tmp_path / "outside.json"
    outside.write_text('{"a": 3}')
    entry.symlink_to(outside)
    assert rulecache._load_json("bridge-classes-abc.json") is None
    for name in ("../outside.json", ".hidden.json", "x.pickle"):
        assert rulecache._load_json(name) is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_folder_owned_by_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    _use(monkeypatch, folder)
    rulecache._store_json("bridge-classes-abc.json", {"a": 1})
    os.chown(folder, 65534, 65534)
    assert rulecache._load_json("bridge-classes-abc.json") is None
    os.chown(folder, 0, 0)
    os.chown(folder / "bridge-classes-abc.json", 65534, 65534)
    assert rulecache._load_json("bridge-classes-abc.json") is None


def test_entries_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    _use(monkeypatch, folder)
    folder.mkdir(mode=0o700)
    (folder / "catalogue-old.pickle").write_bytes(b"legacy")
    (folder / "checks-old.json").write_text("{}")
    for i in range(20):
        rulecache._store_json(f"bridge-classes-{i:04d}.json", {"i": i})
        os.utime(folder / f"bridge-classes-{i:04d}.json", ns=(i * 10**9, i * 10**9))
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == rulecache.KEEP_PER_KIND
    assert "bridge-classes-0019.json" in names and "bridge-classes-0000.json" not in names
    assert not any(n.startswith(("catalogue-", "checks-")) for n in names)


def test_no_cache_flag_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from moe_lint.cli import main

    _use(monkeypatch, tmp_path / "cache")
    assert rulecache.cache_dir() == tmp_path / "cache"
    monkeypatch.setenv("MOE_LINT_NO_CACHE", "1")
    assert rulecache.cache_dir() is None
    monkeypatch.delenv("MOE_LINT_NO_CACHE")
    assert main([str(EXAMPLE), "--no-cache", "--format", "concise"]) == 0
    capsys.readouterr()
    assert rulecache.cache_dir() is None
    rulecache._store_json("bridge-classes-abc.json", {"a": 1})
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
@pytest.mark.parametrize("home", ["missing", "file", "read-only", "unset"])
def test_missing_or_read_only_home_works(tmp_path: Path, home: str) -> None:
    env = _env()
    if home == "missing":
        env["HOME"] = "/nonexistent/moe-lint-home"
    elif home == "file":
        (tmp_path / "home").write_text("not a folder")
        env["HOME"] = str(tmp_path / "home")
    elif home == "read-only":
        (tmp_path / "home").mkdir(mode=0o555)
        env["HOME"] = str(tmp_path / "home")
    else:
        env.pop("HOME", None)
    clean = _cli(str(EXAMPLE), "--format", "concise", env=env, cwd=tmp_path)
    assert (clean.returncode, clean.stderr) == (0, "")
    broken = _cli(str(BROKEN), "--format", "concise", env=env, cwd=tmp_path)
    assert broken.returncode == 1 and broken.stderr == "" and "RCP003" in broken.stdout
    if home == "read-only":
        assert list((tmp_path / "home").iterdir()) == []


# ---- entry points: read from the metadata folders, same answer as importlib.metadata ---------


def test_entry_point_scan_matches_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import entry_points

    site = tmp_path / "site"
    for dist, text in {
        "alpha_pkg-1.0.dist-info": "[console_scripts]\nx = y:z\n\n[moe_lint.rules]\n"
        "# a comment\na = alpha_pkg:provide\n  b =  alpha_pkg.sub:make.attr  \n",
        "Beta.Pkg-2.0.dist-info": "[moe_lint.rules]\nbeta = beta:provide\n",
        "beta_pkg-1.0.dist-info": "[moe_lint.rules]\nshadowed = beta:old\n",
        "gamma-0.1.egg-info": "[moe_lint.rules]\ng = gamma:provide\n",
        "other-1.0.dist-info": "[console_scripts]\nmoe_lint.rules = not:this\n",
    }.items():
        (site / dist).mkdir(parents=True)
        (site / dist / "METADATA").write_text(f"Name: {dist.split('-')[0]}\nVersion: 1\n")
        (site / dist / "entry_points.txt").write_text(text)
    monkeypatch.syspath_prepend(str(site))
    scanned = catalogue._scan_entry_points()
    assert scanned is not None
    expected = [(ep.name, ep.value) for ep in entry_points(group=catalogue.ENTRY_POINT_GROUP)]
    assert sorted(scanned) == sorted(expected)
    assert ("a", "alpha_pkg:provide") in scanned and ("b", "alpha_pkg.sub:make.attr") in scanned
    assert ("g", "gamma:provide") in scanned


def test_entry_point_scan_defers_to_importlib_for_zips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "content" / "zipped-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Name: zipped\nVersion: 1.0\n")
    archive = Path(shutil.make_archive(str(tmp_path / "plugins"), "zip", tmp_path / "content"))
    monkeypatch.syspath_prepend(str(archive))
    assert catalogue._scan_entry_points() is None
    assert isinstance(catalogue._entry_point_plugins(), list)


@pytest.mark.slow
def test_a_lint_opens_nothing_in_the_cache_folder(tmp_path: Path) -> None:
    """Whatever is planted there, a lint (serial, --fix, rules) never reads the folder."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / "catalogue-x.pickle").write_bytes(pickle.dumps(_Touch(tmp_path / "pwned")))
    config = tmp_path / "c.yaml"
    config.write_text(BROKEN.read_text())
    probe = (
        "import os, sys\n"
        f"cache = {str(cache)!r}\n"
        "def hook(event, args):\n"
        "    if event in ('open', 'os.listdir', 'os.scandir') and args and "
        "str(args[0]).startswith(cache):\n"
        "        print('OPENED', event, args[0], file=sys.stderr)\n"
        "sys.addaudithook(hook)\n"
        "from moe_lint.cli import main\n"
        "for argv in ([sys.argv[1], '--format', 'sarif'], [sys.argv[1], '--fix'], ['rules']):\n"
        "    main(argv)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(config)],
        env=_env(MOE_LINT_CACHE_DIR=str(cache)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "OPENED" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert "CG006" in proc.stdout or "RCP003" in proc.stdout
    assert sorted(p.name for p in cache.iterdir()) == ["catalogue-x.pickle"]
