"""Apply fixes as text splices, so every byte outside the edited spans stays as it was.

Edits come from parser marks (character indices into the decoded text), are applied in reverse
order, and overlapping edits are dropped for this pass (the fix loop re-lints and tries again).
A fix is applied only if re-linting the fixed text adds no error or warning and its finding is
gone (see run_fixes). Writes are atomic: a temporary file beside the file (a symlink's target),
then ``os.replace``, keeping mode and owner; a file with hard links is written in place, its
new text staged beside it first and its old bytes restored if the write fails; a file that
cannot be written safely is refused with one line (see write_atomic).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable

from moe_lint.engine.findings import Edit, Finding
from moe_lint.errors import InputError
from moe_lint.records import field, record

MAX_FIX_PASSES = 10


def _choose(edits: Iterable[Edit]) -> list[Edit]:
    """The edits of one pass: sorted, without overlaps (later overlapping ones wait)."""
    chosen: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if chosen and (
            edit.start < chosen[-1].end
            or (edit.start == chosen[-1].start == chosen[-1].end == edit.end)
        ):
            continue
        chosen.append(edit)
    return chosen


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Splice non-overlapping edits into ``text``; later overlapping ones wait for a next pass."""
    out = text
    for edit in reversed(_choose(edits)):
        out = out[: edit.start] + edit.content + out[edit.end :]
    return out


#: Severities a fix must not add: a fix that trades one problem for a new error or warning is
#: not safe, whatever its rule says (info findings, such as assumptions, may appear).
GUARDED = ("error", "warning")


def _problem(finding: Finding) -> tuple[str, str]:
    """Identity of a problem across re-lints: the rule family (``MEM`` of ``MEM001``) and the
    config path. Line numbers move when a fix inserts lines; one family's rules at one path are
    levels of one problem (MEM001 "will OOM" and MEM002 "may not fit" both sit at ``model``)."""
    return finding.code.rstrip("0123456789"), finding.path


@record
class Refusal:
    """A fix that was not applied, and why."""

    finding: Finding
    reason: str


@record
class FixOutcome:
    """What the fix loop did to one text."""

    text: str
    #: Findings of the final text (the last re-lint; the input findings when nothing changed).
    remaining: list[Finding]
    passes: int = 0
    #: Findings whose fixes were applied, as found in the text they were applied to.
    applied: list[Finding] = field(default_factory=list)
    #: Fixes of remaining findings that would add an error or warning to the final text.
    refused: list[Refusal] = field(default_factory=list)


def added_problems(before: list[Finding], after: list[Finding]) -> list[Finding]:
    """Errors and warnings of ``after`` that make it worse than ``before``.

    Per problem (:func:`_problem`), the after-findings, most severe first, are matched with the
    before-findings, most severe first; one without a match at least as severe is added. So an
    error that becomes a warning of its family at the same path is no worse; a new path is.
    """
    rank = {"warning": 1, "error": 2}
    groups: dict[tuple[str, str], list[int]] = {}
    for finding in before:
        if finding.severity in GUARDED:
            groups.setdefault(_problem(finding), []).append(rank[finding.severity])
    for ranks in groups.values():
        ranks.sort(reverse=True)
    added: list[Finding] = []
    used: dict[tuple[str, str], int] = {}
    guarded = [f for f in after if f.severity in GUARDED]
    for finding in sorted(guarded, key=lambda f: -rank[f.severity]):
        key = _problem(finding)
        i = used.get(key, 0)
        ranks = groups.get(key, [])
        if i < len(ranks) and ranks[i] >= rank[finding.severity]:
            used[key] = i + 1
        else:
            added.append(finding)
    return sorted(added, key=Finding.sort_key)


def _why(added: list[Finding]) -> str:
    first = added[0]
    more = f" (and {len(added) - 1} more)" if len(added) > 1 else ""
    return f"it would add {first.severity} {first.code} at {first.path}: {first.message}{more}"


def _try(
    text: str,
    lint: Callable[[str], list[Finding]],
    before: list[Finding],
    fixes: list[Finding],
) -> tuple[list[Finding] | None, str]:
    """Re-lint a candidate text: (its findings, "") or (None, why it must not be written).

    Besides adding no error or warning, each of ``fixes`` must resolve its own finding: a
    fix whose finding still fires did not do what it says (an edit that landed somewhere
    else), and applying it again on the next pass would repeat it.
    """
    try:
        after = lint(text)
    except InputError as exc:
        return None, f"the fixed file would not load: {exc}"
    added = added_problems(before, after)
    if added:
        return None, _why(added)
    still = {_fix_key(f) for f in after} & {_fix_key(f) for f in fixes}
    if still:
        code, path = min(still)
        return None, f"it would not resolve the finding ({code} still fires at {path})"
    return after, ""


def _fix_key(finding: Finding) -> tuple[str, str]:
    return finding.code, finding.path


def run_fixes(
    text: str,
    lint: Callable[[str], list[Finding]],
    unsafe: bool,
    findings: list[Finding] | None = None,
) -> FixOutcome:
    """Apply fixes and re-lint until nothing changes, never adding an error or warning.

    ``lint`` returns the findings of a text (raising InputError when it does not load);
    ``findings`` are those of ``text`` when the caller already has them, so a file with nothing
    to fix is linted once, by the caller, and never re-linted. Each pass applies all its fixes
    together and re-lints once; only if that adds an error or warning (:func:`added_problems`)
    are they tried one by one, keeping each that adds none. A fix refused on an earlier text
    is tried again (other fixes change what it does), so the loop stops at a text on which
    every fix left was refused: fixing the result again changes nothing.
    """
    if findings is None:
        findings = lint(text)
    outcome = FixOutcome(text, findings)
    allowed = {"safe", "unsafe"} if unsafe else {"safe"}
    refused: dict[tuple[str, str], Refusal] = {}
    judged: dict[tuple[str, str], str] = {}  # refused fix -> the text it was refused on
    while outcome.passes < MAX_FIX_PASSES:
        candidates = [
            f
            for f in outcome.remaining
            if f.applicability in allowed
            and f.edits
            and (_fix_key(f) not in judged or judged[_fix_key(f)] != outcome.text)
        ]
        if not candidates:  # none left, or all refused on exactly this text
            break
        edits = [e for f in candidates for e in f.edits]
        new_text = apply_edits(outcome.text, edits)
        if new_text == outcome.text:
            break
        chosen = set(_choose(edits))
        applied = [f for f in candidates if chosen.issuperset(f.edits)]
        after, why = _try(new_text, lint, outcome.remaining, applied)
        if after is None:
            if len(candidates) == 1:  # the batch was this one fix: no need to try it again
                refused[_fix_key(candidates[0])] = Refusal(candidates[0], why)
                break
            new_text, after, applied = _one_by_one(outcome, candidates, lint, refused, judged)
            if not applied:
                break
        assert after is not None
        for finding in applied:
            refused.pop(_fix_key(finding), None)
        outcome.text, outcome.remaining = new_text, after
        outcome.applied += applied
        outcome.passes += 1
    left = {_fix_key(f) for f in outcome.remaining}
    outcome.refused = [r for key, r in refused.items() if key in left]
    return outcome


def _one_by_one(
    outcome: FixOutcome,
    candidates: list[Finding],
    lint: Callable[[str], list[Finding]],
    refused: dict[tuple[str, str], Refusal],
    judged: dict[tuple[str, str], str],
) -> tuple[str, list[Finding] | None, list[Finding]]:
    """Keep each fix that, added to the ones kept so far, adds no error or warning.

    A fix refused after the last kept one was judged on the pass's final text; one refused
    before it is tried again next pass (``judged`` records the text each was refused on).
    """
    base, before = outcome.text, outcome.remaining
    kept: list[Finding] = []
    text, after = base, None
    for finding in candidates:
        edits = [e for f in [*kept, finding] for e in f.edits]
        if not set(_choose(edits)).issuperset(finding.edits):
            continue  # overlaps a kept fix: tried again on the next pass
        trial = apply_edits(base, edits)
        if trial == text:
            continue
        found, why = _try(trial, lint, before, [finding])
        if found is None:
            refused[_fix_key(finding)] = Refusal(finding, why)
            judged[_fix_key(finding)] = text
            continue
        kept.append(finding)
        text, after = trial, found
    return text, after, kept


def try_fix(
    text: str, lint: Callable[[str], list[Finding]], before: list[Finding], finding: Finding
) -> tuple[str | None, str]:
    """One finding's fix alone, judged as :func:`run_fixes` judges each fix: (the fixed text,
    "") or (None, why it is refused). For an editor's code action, which applies exactly one
    fix: it is offered only if ``--fix`` would accept it on this text (it adds no error or
    warning and its finding is gone). ``before`` are the findings of ``text``."""
    if not finding.edits:
        return None, "the fix has no edit here"
    fixed = apply_edits(text, finding.edits)
    if fixed == text:
        return None, "the fix changes nothing"
    after, why = _try(fixed, lint, before, [finding])
    return (None, why) if after is None else (fixed, "")


def fix_loop(
    text: str, lint: Callable[[str], list[Finding]], unsafe: bool
) -> tuple[str, list[Finding], int]:
    """:func:`run_fixes` as (text, remaining findings, passes)."""
    outcome = run_fixes(text, lint, unsafe)
    return outcome.text, outcome.remaining, outcome.passes


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


class WriteRefused(InputError):
    """The fixed text was not written: one line saying why; the file is as it was."""


_VANISHED = "the file vanished before the fix was written; the fix was not written"


def write_atomic(path: str, text: str, had_bom: bool, expected: bytes | None = None) -> None:
    """Replace the file at ``path`` with ``text`` atomically, or raise :class:`WriteRefused`.

    A symlink is followed: its target is replaced (temporary file beside the target, then
    ``os.replace``), keeping the target's permission bits and owner, so the link stays a link.
    A file with hard links (``st_nlink > 1``) cannot be replaced without splitting them (the
    other names would keep the old text), so its own inode is written in place instead
    (:func:`_write_in_place`): the new text is first staged and synced beside it, the space
    reserved, and a failed write puts the old bytes back.
    Refused, with the file untouched: a file whose mode has no write bit (checked on the mode
    itself, since root may write anything), a folder without one (the temporary file could
    not be created), a file that vanished or, given ``expected`` (the bytes that were linted),
    changed since it was read. No temporary file is left behind.
    """
    data = (b"\xef\xbb\xbf" if had_bom else b"") + text.encode("utf-8")
    target = os.path.realpath(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        raise WriteRefused(_VANISHED) from None
    except OSError as exc:
        raise WriteRefused(f"cannot write the fix: {exc.strerror or exc}; not written") from None
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused("not a regular file; the fix was not written")
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise WriteRefused(f"the file is read-only (mode {mode:04o}); the fix was not written")
    folder = os.path.dirname(target)
    folder_mode = stat.S_IMODE(os.stat(folder).st_mode)
    if not folder_mode & 0o222 or not os.access(folder, os.W_OK | os.X_OK):
        raise WriteRefused(
            f"its folder {folder} is read-only (mode {folder_mode:04o}), so the file cannot be "
            "replaced; the fix was not written"
        )
    if expected is not None:
        try:
            with open(target, "rb") as handle:
                current = handle.read(len(expected) + 1)
        except FileNotFoundError:
            raise WriteRefused(_VANISHED) from None
        except OSError as exc:
            raise WriteRefused(f"cannot re-read the file: {exc.strerror or exc}") from None
        if current != expected:
            raise WriteRefused("the file changed while it was being fixed; the fix was not written")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".moe-lint-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if info.st_nlink > 1:
            _write_in_place(target, data, info, expected)
            return
        os.chmod(tmp, mode)
        if hasattr(os, "chown") and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):
                os.chown(tmp, info.st_uid, info.st_gid)
        if not os.path.exists(target):
            raise FileNotFoundError(target)
        os.replace(tmp, target)
        tmp = None
    except FileNotFoundError:
        raise WriteRefused(_VANISHED) from None
    except OSError as exc:
        raise WriteRefused(
            f"cannot write the fix: {exc.strerror or exc}; the file was not changed"
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _write_in_place(target: str, data: bytes, info: os.stat_result, expected: bytes | None) -> None:
    """Write ``data`` over the file's own bytes (its inode, so every hard link sees the fix).

    The caller has staged and synced ``data`` in a temporary file beside it (a crash mid-write
    leaves that copy) and re-read the file. Here the space is reserved first where the
    filesystem can (``posix_fallocate``: a full disk refuses before a byte changes), the file
    is checked to be the one stat'ed (same inode), written, truncated and synced; if a write
    fails, the old bytes are written back and the refusal says so.
    """
    with open(target, "r+b") as handle:
        fd = handle.fileno()
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise WriteRefused("the file changed while it was being fixed; the fix was not written")
        old = handle.read()
        if expected is not None and old != expected:
            raise WriteRefused("the file changed while it was being fixed; the fix was not written")
        if hasattr(os, "posix_fallocate") and len(data) > len(old):
            try:
                os.posix_fallocate(fd, 0, len(data))
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise  # ENOSPC and the like: nothing was written yet
        try:
            handle.seek(0)
            handle.write(data)
            handle.truncate(len(data))
            handle.flush()
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                handle.seek(0)
                handle.write(old)
                handle.truncate(len(old))
                handle.flush()
                os.fsync(fd)
            raise WriteRefused(
                f"cannot write the fix: {exc.strerror or exc}; the old text was written back"
            ) from None
