"""--fix never corrupts a file (issue 10): each repro runs the real CLI in a subprocess.

Each case checks the exit code, the one line on stderr (for a refusal), CPU time < 2 s and
RSS < 300 MB (see test_hostile.run_cli), and the bytes on disk: a refused write leaves the
file as it was and no temporary file behind; an applied fix changes only what it says.

Write failures that a subprocess cannot stage (the file vanishing or changing between the
lint and the write, an OSError from the filesystem) run in-process with the write's steps
patched; they check the same things.

We run as root in CI containers, where permission bits do not stop a write (``os.access``
says yes): "read-only" is the mode bits, which moe-lint checks itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, run_main
from test_hostile import MAX_RSS_MB, MAX_SECONDS, check_refused, run_cli

PACK = DATA / "packs" / "fix-safety.yaml"

#: CG006 (cuda graphs without the TE RNG tracker) inserts ``model.use_te_rng_tracker: true``;
#: the model section ends in a nested block (a dump's ``{_target_: ...}`` form).
NESTED_LAST = (
    "model:\n"
    "  tensor_model_parallel_size: 1\n"
    "  cuda_graph_impl: transformer_engine\n"
    "  cuda_graph_modules: [attn]\n"
    "  activation_func:\n"
    "    _call_: false\n"
    "    _target_: torch.nn.functional.silu\n"
    "train:\n"
    "  micro_batch_size: 1\n"
)


def _wrap(text: str) -> str:
    """The same config under a top-level ``ConfigContainer:`` key, as some Bridge dumps are."""
    return "ConfigContainer:\n" + "".join(f"  {line}" for line in text.splitlines(True))


def _fix_cli(path: Path, *extra: str) -> tuple[int, str, str]:
    code, out, err, seconds, rss = run_cli([str(path), "--fix", "-q", *extra], path.parent)
    assert "Traceback" not in out + err
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB, (seconds, rss)
    return code, out, err


def _no_temp_files(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.startswith(".moe-lint-")] == []


@pytest.mark.slow
@pytest.mark.parametrize("select", [[], ["--select", "CG006"]], ids=["all-rules", "select"])
@pytest.mark.parametrize(
    ("variant", "eol"),
    [("wrapped", "\n"), ("wrapped", "\r\n"), ("wrapped", "\r"), ("plain", "\r"), ("plain", "\n")],
)
def test_inserted_key_lands_in_its_section(
    tmp_path: Path, variant: str, eol: str, select: list[str]
) -> None:
    """Before: in the wrapped file the key went into ``train`` (ten times with --select CG006,
    one per fix pass; the next run exited 2 on duplicate keys); in a CR-only file it was
    appended at the end of the file with a "\\n". Now it goes under ``model``, once, with the
    file's own line ending."""
    text = NESTED_LAST if variant == "plain" else _wrap(NESTED_LAST)
    text = text.replace("\n", eol)
    path = tmp_path / "cfg.yaml"
    path.write_bytes(text.encode())
    code, _, err = _fix_cli(path, *select)
    fixed = path.read_bytes().decode()
    data = yaml.safe_load(fixed)
    section = data["ConfigContainer"] if variant == "wrapped" else data
    assert section["model"]["use_te_rng_tracker"] is True
    assert section["train"] == {"micro_batch_size": 1}
    original = yaml.safe_load(text)
    want = original["ConfigContainer"] if variant == "wrapped" else original
    want["model"]["use_te_rng_tracker"] = True
    assert section == want
    assert fixed.count("use_te_rng_tracker") == 1
    # Only one line was added, right after the nested block, in the file's line-ending style.
    before, after = text.split(eol), fixed.split(eol)
    assert len(after) == len(before) + 1
    added = [line for line in after if line not in before]
    assert [line.strip() for line in added] == ["use_te_rng_tracker: true"]
    assert after.index(added[0]) == before.index(next(x for x in before if "train:" in x))
    if eol != "\n":
        assert "\n" not in fixed.replace("\r\n", "")
    code, _, err, _, _ = run_cli([str(path), *select], tmp_path)
    assert code in (0, 1) and "more than once" not in err, err


@pytest.mark.slow
def test_flow_section_gets_the_key_inside_its_braces(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    text = (
        "model: {tensor_model_parallel_size: 1, cuda_graph_impl: transformer_engine,"
        " cuda_graph_modules: [attn]}  # flow\ntrain: {micro_batch_size: 1}\n"
    )
    path.write_text(text)
    _fix_cli(path)
    assert path.read_text() == text.replace("[attn]}", "[attn], use_te_rng_tracker: true}")


@pytest.mark.slow
def test_no_trailing_newline_stays_so(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    text = NESTED_LAST.replace("train:\n  micro_batch_size: 1\n", "").rstrip("\n")
    path.write_text(text)
    _fix_cli(path)
    assert path.read_text() == text + "\n  use_te_rng_tracker: true"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "needle"),
    [
        # an alias: the fix would have edited the anchor's node (and dropped the anchor)
        ("model:\n  kv_channels: &n 7\n  num_layers: *n\n", "model.num_layers is an alias (*n)"),
        # an anchored node: the anchor was silently dropped
        ("model:\n  num_layers: &n 7\n", "model.num_layers carries an anchor (&n)"),
        ("model:\n  num_layers: &n 7\n  kv_channels: *n\n", "carries an anchor (&n)"),
        # a key a merge brought in is written in the merged mapping
        ("model:\n  <<: &b {num_layers: 7}\n  hidden_size: 1\n", "comes from a merge key"),
    ],
    ids=["alias", "anchor", "anchor-used", "merge"],
)
def test_no_edit_through_an_alias_or_anchor(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    code, _, err = _fix_cli(path, "--rules", str(PACK), "--select", "TSA002")
    assert path.read_text() == text
    [line] = err.strip().splitlines()
    assert line.startswith(f"{path}:") and "TSA002 fix not applied: " in line and needle in line
    assert code == 0  # TSA002 is a warning


@pytest.mark.slow
def test_symlink_target_is_edited_in_place(tmp_path: Path) -> None:
    """Before: the link was replaced by a regular file holding the fix (the target kept the
    old text)."""
    real = tmp_path / "real" / "cfg.yaml"
    real.parent.mkdir()
    real.write_text(NESTED_LAST)
    real.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    code, _, err = _fix_cli(link)
    assert code == 0 and err == "", err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "use_te_rng_tracker: true" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    _no_temp_files(tmp_path)
    _no_temp_files(real.parent)


def _read_only_file(d: Path) -> Path:
    path = d / "ro.yaml"
    path.write_text(NESTED_LAST)
    path.chmod(0o444)
    return path


@pytest.mark.slow
def test_read_only_file_is_refused(tmp_path: Path) -> None:
    """Before: overwritten (root ignores the mode). Now: exit 2, one line, untouched."""
    check_refused(tmp_path, "ro", "", "read-only (mode 0444)", setup=_read_only_file)
    assert stat.S_IMODE((tmp_path / "ro.yaml").stat().st_mode) == 0o444


@pytest.mark.slow
def test_read_only_folder_is_refused(tmp_path: Path) -> None:
    """Before: exit 3 where the temporary file could not be created (root: written anyway).
    Now: exit 2, one line, untouched, no temporary file."""
    folder = tmp_path / "ro"

    def make(d: Path) -> Path:
        folder.mkdir()
        path = folder / "cfg.yaml"
        path.write_text(NESTED_LAST)
        folder.chmod(0o555)
        return path

    try:
        check_refused(tmp_path, "rodir", "", "is read-only (mode 0555)", setup=make)
        _no_temp_files(folder)
    finally:
        folder.chmod(0o755)


@pytest.mark.slow
def test_diff_on_read_only_file_still_shows_the_fix(tmp_path: Path) -> None:
    path = _read_only_file(tmp_path)
    code, out, _, _, _ = run_cli([str(path), "--diff"], tmp_path)
    assert code == 1 and "+  use_te_rng_tracker: true" in out
    assert path.read_text() == NESTED_LAST


# ---- in-process: the file changes under the fix ------------------------------------------------


def _during_relint(monkeypatch: pytest.MonkeyPatch, action: Any) -> None:
    """Run ``action`` when --fix re-lints the fixed text, i.e. after the file was read."""
    import moe_lint.linting
    from moe_lint.linting import lint_text as real

    def relint(*args: Any, **kwargs: Any) -> Any:
        action()
        return real(*args, **kwargs)

    # The CLI's fix loop re-lints through linting.relint_for_fix, which calls linting.lint_text.
    monkeypatch.setattr(moe_lint.linting, "lint_text", relint)


@pytest.mark.parametrize(
    ("name", "needle"),
    [("vanished", "vanished before the fix was written"), ("changed", "changed while")],
)
def test_file_that_vanishes_or_changes_mid_fix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    needle: str,
) -> None:
    """Before: a deleted file gave exit 3 (FileNotFoundError), a changed one was overwritten
    with a fix of its old text. Now: exit 2, one line, nothing written."""
    path = tmp_path / "cfg.yaml"
    path.write_text(NESTED_LAST)
    edited = NESTED_LAST.replace("micro_batch_size: 1", "micro_batch_size: 2")

    def act() -> None:
        if name == "vanished":
            path.unlink(missing_ok=True)
        else:
            path.write_text(edited)

    _during_relint(monkeypatch, act)
    code, _, err = run_main(capsys, str(path), "--fix", "-q")
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith(f"{path}: error: ") and needle in line
    assert (not path.exists()) if name == "vanished" else path.read_text() == edited
    _no_temp_files(tmp_path)


@pytest.mark.parametrize("step", ["mkstemp", "replace"])
def test_filesystem_error_leaves_no_temp_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    step: str,
) -> None:
    """A read-only filesystem (EROFS) or a full disk: exit 2, one line, file untouched."""
    import errno
    import tempfile

    path = tmp_path / "cfg.yaml"
    path.write_text(NESTED_LAST)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, "Read-only file system")

    if step == "mkstemp":
        monkeypatch.setattr(tempfile, "mkstemp", fail)
    else:
        monkeypatch.setattr(os, "replace", fail)
    code, _, err = run_main(capsys, str(path), "--fix", "-q")
    assert code == 2
    [line] = err.strip().splitlines()
    assert (
        line
        == f"{path}: error: cannot write the fix: Read-only file system; the file was not changed"
    )
    assert path.read_text() == NESTED_LAST
    _no_temp_files(tmp_path)


@pytest.mark.slow
def test_hard_links_survive_a_fix(tmp_path: Path) -> None:
    """Before: os.replace gave the fixed name a new inode, so the other name of a hard-linked
    config kept the old text (the link was split). Now the inode is written in place: both
    names see the fix, mode and inode unchanged, no temporary file left."""
    first = tmp_path / "cfg.yaml"
    first.write_text(NESTED_LAST)
    first.chmod(0o640)
    other = tmp_path / "other" / "same.yaml"
    other.parent.mkdir()
    os.link(first, other)
    inode = first.stat().st_ino
    code, _, err = _fix_cli(first)
    assert code == 0 and err == "", err
    assert first.stat().st_ino == inode == other.stat().st_ino and first.stat().st_nlink == 2
    assert "use_te_rng_tracker: true" in other.read_text()
    assert other.read_text() == first.read_text()
    assert stat.S_IMODE(first.stat().st_mode) == 0o640
    _no_temp_files(tmp_path)


@pytest.mark.parametrize("step", ["fallocate", "write"])
def test_hard_linked_file_is_whole_after_a_failed_write(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    step: str,
) -> None:
    """A full disk while writing in place: refused before a byte changes (the reservation),
    or the old bytes written back (a failing write); both names keep the old text."""
    import errno
    import io

    from moe_lint.output import fix

    path = tmp_path / "cfg.yaml"
    path.write_text(NESTED_LAST)
    os.link(path, tmp_path / "link.yaml")

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    if step == "fallocate":
        if not hasattr(os, "posix_fallocate"):
            pytest.skip("no posix_fallocate on this platform")
        monkeypatch.setattr(os, "posix_fallocate", full)
        needle = "No space left on device; the file was not changed"
    else:
        writes: list[bytes] = []
        real_write = io.BufferedRandom.write

        class Failing(io.BufferedRandom):
            def write(self, data: Any) -> int:
                writes.append(bytes(data))
                if len(writes) == 1:  # the fix: half of it lands, then the disk is full
                    real_write(self, bytes(data)[: len(data) // 2])
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_write(self, data)

        real_open = open

        def opener(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            handle = real_open(file, mode, *args, **kwargs)
            if mode == "r+b":
                raw = handle.detach()
                return Failing(raw)
            return handle

        monkeypatch.setattr(fix, "open", opener, raising=False)
        needle = "No space left on device; the old text was written back"
    code, _, err = run_main(capsys, str(path), "--fix", "-q")
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith(f"{path}: error: cannot write the fix: ") and needle in line, line
    assert path.read_text() == NESTED_LAST == (tmp_path / "link.yaml").read_text()
    _no_temp_files(tmp_path)
