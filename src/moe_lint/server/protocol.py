"""The pygls language server: moe-lint's findings as diagnostics, its fixes as code actions,
its rule and field documentation as hovers and its memory estimate as code lenses.

Everything moe-lint decides is :mod:`moe_lint.server.linter`'s; this module is LSP only:
positions, ranges and edits in the client's units, one lint per keystroke pause, and a
boundary around every handler so that nothing a file holds, and no bug of moe-lint's, stops
the server answering.

Timing. A change is linted :data:`DEBOUNCE_S` after the last one (a new change cancels the
pending lint), in the event loop's thread: the per-file time limit is a ``SIGALRM`` timer,
which only the main thread can take, and a lint of a full Bridge dump takes tens of
milliseconds, so the loop is never held long. Opening and saving lint at once. Requests
(hover, code actions, code lenses) use the last lint when it is of the document's current
version and lint first otherwise, so they never answer for an older text.
"""

from __future__ import annotations

import asyncio
import bisect
import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, ParamSpec, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import PositionCodec, TextDocument

from moe_lint import __version__
from moe_lint.engine.findings import INPUT_ERROR_CODE, Finding, docs_url
from moe_lint.server.linter import Linter, Outcome, StageLine

#: Seconds after the last change before a document is linted (a keystroke pause).
DEBOUNCE_S = 0.1
#: The command a memory code lens runs (shows its line as a message).
SHOW_ESTIMATE = "moe-lint.showEstimate"
#: The code action kind of "fix everything that is safe" (``moe-lint check --fix``).
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.moe-lint"
FIX_ALL_TITLE = "moe-lint: fix all safe findings (moe-lint --fix)"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
#: Line breaks as LSP counts lines (the protocol's three; YAML's extra ones are rare enough
#: that a position past them is only clamped into the document, never an error).
_BREAK = re.compile(r"\r\n|\r|\n")

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Lines:
    """A text's lines as LSP counts them, to turn moe-lint's 1-based code-point positions and
    character offsets into the client's positions (UTF-16 unless it chose another)."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.text, self.codec = text, codec
        self.starts, self.ends = [0], []
        for match in _BREAK.finditer(text):
            self.ends.append(match.start())
            self.starts.append(match.end())
        self.ends.append(len(text))

    def line(self, number: int) -> str:
        return self.text[self.starts[number] : self.ends[number]]

    def position(self, line: int, character: int) -> types.Position:
        """0-based ``line`` and code-point ``character``, clamped into the text."""
        line = min(max(line, 0), len(self.starts) - 1)
        text = self.line(line)
        character = min(max(character, 0), len(text))
        return types.Position(line, self.codec.client_num_units(text[:character]))

    def at_offset(self, offset: int) -> types.Position:
        line = bisect.bisect_right(self.starts, offset) - 1
        return self.position(line, offset - self.starts[line])

    def line_end(self, line: int) -> types.Position:
        line = min(max(line, 0), len(self.starts) - 1)
        return self.position(line, len(self.line(line)))

    def from_client(self, position: types.Position) -> tuple[int, int]:
        """The client's position as (0-based line, code-point character)."""
        line = min(max(position.line, 0), len(self.starts) - 1)
        units = 0
        for index, char in enumerate(self.line(line)):
            if units >= position.character:
                return line, index
            units += self.codec.client_num_units(char)
        return line, len(self.line(line))


@dataclass
class _Open:
    """What the server keeps for one open document: its last lint and what was computed
    from it (each request of the same version reuses them)."""

    version: int | None
    outcome: Outcome
    published: bool = False
    fixes: dict[tuple[str, str, int], tuple[str | None, str]] = field(default_factory=dict)
    fixed_all: str | None = None
    stages: list[StageLine] | None = None


class MoeLintServer(LanguageServer):
    """The server and its state: the linter, each open document's last lint, and the
    pending (debounced) lints."""

    def __init__(self) -> None:
        super().__init__("moe-lint", __version__)
        self.linter = Linter()
        self.documents: dict[str, _Open] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}


def _guard(default: Callable[[], Any]) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A handler that cannot fail: an exception (a bug) is logged to the client and the
    handler answers ``default()`` (no hover, no actions), so the next request is served."""

    def wrap(handler: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(handler)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return handler(*args, **kwargs)
            except Exception as exc:
                server = args[0]
                if isinstance(server, MoeLintServer):
                    _log(server, f"moe-lint: internal error in {handler.__name__}: {exc!r}")
                result: _R = default()
                return result

        return guarded

    return wrap


def _log(server: MoeLintServer, message: str) -> None:
    try:
        server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Error, message=message[:4000])
        )
    except Exception:  # the client went away: nothing left to tell
        return


# ------------------------------------------------------------------------------ linting


def _paths(server: MoeLintServer, document: TextDocument) -> tuple[str, str | None]:
    """The file name a document is linted as, and the file whose folder decides its
    settings: a file's own path; an unsaved buffer's URI, with the workspace's settings."""
    if document.uri.startswith("file:") and document.path:
        return document.path, None
    root = server.workspace.root_path
    return document.uri, str(Path(root) / "untitled") if root else None


def _current(server: MoeLintServer, uri: str) -> _Open:
    """The document's lint for its current version (linting it now when the last one is of
    an older text)."""
    document = server.workspace.get_text_document(uri)
    known = server.documents.get(uri)
    if known is not None and known.version == document.version:
        return known
    path, settings_path = _paths(server, document)
    entry = _Open(document.version, server.linter.lint(path, document.source, settings_path))
    server.documents[uri] = entry
    return entry


def _publish(server: MoeLintServer, uri: str) -> None:
    """Lint the document if needed and publish its diagnostics (once per version)."""
    server.pending.pop(uri, None)
    if uri not in server.workspace.text_documents:
        return  # closed while the lint was pending
    try:
        entry = _current(server, uri)
        if entry.published:
            return
        lines = _Lines(entry.outcome.text, server.workspace.position_codec)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=diagnostics(entry.outcome, lines), version=entry.version
            )
        )
        entry.published = True
    except Exception as exc:  # a bug outside the linter's own boundary: the next edit retries
        _log(server, f"moe-lint: internal error while linting {uri}: {exc!r}")


def _schedule(server: MoeLintServer, uri: str, delay: float) -> None:
    """Lint ``uri`` after ``delay`` seconds, replacing a lint already pending for it."""
    pending = server.pending.pop(uri, None)
    if pending is not None:
        pending.cancel()
    loop = asyncio.get_running_loop()
    server.pending[uri] = loop.call_later(delay, _publish, server, uri)


def _relint_all(server: MoeLintServer) -> None:
    """Settings changed: every open document is linted again (soon, one after another)."""
    for uri in list(server.workspace.text_documents):
        server.documents.pop(uri, None)
        _schedule(server, uri, 0)


# ---------------------------------------------------------------------------- translation


def _finding_range(finding: Finding, lines: _Lines) -> types.Range:
    """The finding's span as an LSP range: moe-lint's 1-based line and column (code points,
    end exclusive) -> 0-based positions; a point widens to the end of its line."""
    line, column = finding.position()
    if finding.argument is None:
        end_line, end_column = finding.end_line, finding.end_column
    else:
        end_line, end_column = line, column
    start = lines.position(line - 1, column - 1)
    end = lines.position(end_line - 1, end_column - 1)
    if (end.line, end.character) <= (start.line, start.character):
        end = lines.line_end(line - 1)
    return types.Range(start=start, end=end)


def _finding_message(finding: Finding) -> str:
    """What the CLI's text report says about the finding: the message, the derivation and
    the fix, one line each."""
    message = finding.message
    if finding.argument is not None:
        message = f"{finding.argument.label}: {message}"
    if finding.derivation:
        message += f"\nderived: {finding.derivation}"
    if finding.fix:
        marks = {"safe": "  [fix: --fix]", "unsafe": "  [fix: --unsafe-fixes]"}  # output/text
        mark = marks.get(finding.applicability or "", "") if finding.edits else ""
        message += f"\nhelp: {finding.fix}{mark}"
    return message


def finding_diagnostic(finding: Finding, lines: _Lines) -> types.Diagnostic:
    return types.Diagnostic(
        range=_finding_range(finding, lines),
        message=_finding_message(finding),
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
        code=finding.code,
        code_description=types.CodeDescription(href=docs_url(finding.code)),
        source="moe-lint",
        data={"name": finding.name, "path": finding.path, "fix": finding.applicability},
    )


def diagnostics(outcome: Outcome, lines: _Lines) -> list[types.Diagnostic]:
    """The document's diagnostics: its findings, or its one problem."""
    problem = outcome.problem
    if problem is None:
        return [finding_diagnostic(f, lines) for f in outcome.findings]
    line = (problem.line or 1) - 1
    start = lines.position(line, (problem.column or 1) - 1)
    end = lines.line_end(line)
    if (end.line, end.character) <= (start.line, start.character):
        start = lines.position(line, 0)
    kind = outcome.problem_kind
    return [
        types.Diagnostic(
            range=types.Range(start=start, end=end),
            message=problem.message,
            severity=types.DiagnosticSeverity.Error,
            code=INPUT_ERROR_CODE if kind == "input" else None,
            source="moe-lint",
            data={"kind": kind},
        )
    ]


def _split_keep(text: str) -> list[str]:
    """``text`` in lines with their breaks (LSP's breaks), so that ''.join gives it back."""
    out, start = [], 0
    for match in _BREAK.finditer(text):
        out.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def text_edits(before: str, after: str, lines: _Lines) -> list[types.TextEdit]:
    """The edits that turn ``before`` into ``after``: the changed hunks (difflib over the
    lines between the common head and tail), each cut to the characters that differ."""
    head = 0
    limit = min(len(before), len(after))
    while head < limit and before[head] == after[head]:
        head += 1
    head = before.rfind("\n", 0, head) + 1  # whole lines, so difflib sees lines
    tail = 0
    while tail < limit - head and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]:
        tail += 1
    old = _split_keep(before[head : len(before) - tail])
    new = _split_keep(after[head : len(after) - tail])
    offsets = [head]
    for piece in old:
        offsets.append(offsets[-1] + len(piece))
    edits = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = offsets[i1], offsets[i2]
        removed, added = before[start:end], "".join(new[j1:j2])
        common = 0
        while common < min(len(removed), len(added)) and removed[common] == added[common]:
            common += 1
        back = 0
        while (
            back < min(len(removed), len(added)) - common
            and removed[len(removed) - 1 - back] == added[len(added) - 1 - back]
        ):
            back += 1
        edits.append(
            types.TextEdit(
                range=types.Range(
                    start=lines.at_offset(start + common), end=lines.at_offset(end - back)
                ),
                new_text=added[common : len(added) - back],
            )
        )
    return edits


def _workspace_edit(
    server: MoeLintServer, uri: str, version: int | None, before: str, after: str
) -> types.WorkspaceEdit:
    """A WorkspaceEdit of the document, bound to its version where the client can check one
    (an edit computed for an older text is then refused, not misapplied)."""
    edits = text_edits(before, after, _Lines(before, server.workspace.position_codec))
    capabilities = server.client_capabilities.workspace
    edit_support = capabilities.workspace_edit if capabilities is not None else None
    if edit_support is not None and edit_support.document_changes:
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        document_edit = types.TextDocumentEdit(text_document=identifier, edits=list(edits))
        return types.WorkspaceEdit(document_changes=[document_edit])
    return types.WorkspaceEdit(changes={uri: edits})


def _overlaps(a: types.Range, b: types.Range) -> bool:
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start <= b_end and b_start <= a_end


def _kind(kind: types.CodeActionKind | str) -> str:
    """A code action kind as its wire string (``str()`` of the enum is its Python name)."""
    return kind.value if isinstance(kind, types.CodeActionKind) else str(kind)


def _wants(only: list[str] | None, kind: str) -> bool:
    """Whether a code action of ``kind`` is asked for (``context.only`` holds prefixes)."""
    return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)


# ------------------------------------------------------------------------------ the server


def create_server() -> MoeLintServer:
    """The server with its features registered (not started: :func:`serve` starts it)."""
    server = MoeLintServer()

    @server.feature(types.INITIALIZE)
    @_guard(lambda: None)
    def initialize(ls: MoeLintServer, params: types.InitializeParams) -> None:
        ls.linter.configure(params.initialization_options)
        ls.linter.warm()

    @server.feature(types.INITIALIZED)
    @_guard(lambda: None)
    def initialized(ls: MoeLintServer, params: types.InitializedParams) -> None:
        _watch_settings(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @_guard(lambda: None)
    def did_open(ls: MoeLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.documents.pop(params.text_document.uri, None)
        _publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @_guard(lambda: None)
    def did_change(ls: MoeLintServer, params: types.DidChangeTextDocumentParams) -> None:
        _schedule(ls, params.text_document.uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @_guard(lambda: None)
    def did_save(ls: MoeLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            _relint_all(ls)  # its settings may have changed for every open config
        elif uri in ls.documents:
            ls.documents.pop(uri, None)  # settings beside it may have changed too
            _schedule(ls, uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_guard(lambda: None)
    def did_close(ls: MoeLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        pending = ls.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        if ls.documents.pop(uri, None) is not None:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @_guard(lambda: None)
    def did_change_configuration(
        ls: MoeLintServer, params: types.DidChangeConfigurationParams
    ) -> None:
        settings = params.settings
        if isinstance(settings, dict) and ("moe-lint" in settings or "moeLint" in settings):
            ls.linter.configure(settings)
            _relint_all(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @_guard(lambda: None)
    def did_change_watched_files(
        ls: MoeLintServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        _relint_all(ls)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
        ),
    )
    @_guard(list)
    def code_action(ls: MoeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return _code_actions(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    def code_action_resolve(ls: MoeLintServer, params: types.CodeAction) -> types.CodeAction:
        try:
            if params.kind is not None and _kind(params.kind) == FIX_ALL:
                return _resolve_fix_all(ls, params)
        except Exception as exc:  # a bug: the action comes back as it went, without an edit
            _log(ls, f"moe-lint: internal error in codeAction/resolve: {exc!r}")
        return params

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @_guard(lambda: None)
    def hover(ls: MoeLintServer, params: types.HoverParams) -> types.Hover | None:
        return _hover(ls, params)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @_guard(list)
    def code_lens(ls: MoeLintServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        return _code_lenses(ls, params.text_document.uri)

    @server.command(SHOW_ESTIMATE)
    @_guard(lambda: None)
    def show_estimate(ls: MoeLintServer, *args: Any) -> None:
        text = " ".join(str(a) for a in args if isinstance(a, str))[:4000]
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=text or "moe-lint")
        )

    return server


def _watch_settings(server: MoeLintServer) -> None:
    """Ask the client to report changes of pyproject.toml files, where it can watch files
    for a server (dynamic registration): every open config is then linted again when its
    settings change, even though the server is not attached to TOML files."""
    workspace = server.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
    )
    registration = types.Registration(
        id="moe-lint-settings", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )  # fmt: skip
    server.client_register_capability(types.RegistrationParams(registrations=[registration]))


def _code_actions(server: MoeLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """A quick fix per finding in the range whose fix ``--fix`` would accept on this text
    (an unsafe one titled so, never preferred; a refused one disabled with the reason), and
    "fix all" (the text ``moe-lint check --fix`` writes) when a safe fix applies."""
    uri = params.text_document.uri
    entry = _current(server, uri)
    outcome = entry.outcome
    lines = _Lines(outcome.text, server.workspace.position_codec)
    only = [_kind(k) for k in params.context.only] if params.context.only else None
    actions: list[types.CodeAction] = []
    capabilities = server.client_capabilities.text_document
    code_action_caps = capabilities.code_action if capabilities is not None else None
    disabled_support = bool(code_action_caps and code_action_caps.disabled_support)
    if _wants(only, types.CodeActionKind.QuickFix.value):
        for finding in outcome.findings:
            if finding.applicability not in ("safe", "unsafe") or not finding.edits:
                continue
            diagnostic = finding_diagnostic(finding, lines)
            if not _overlaps(diagnostic.range, params.range):
                continue
            key = (finding.code, finding.path, finding.line)
            if key not in entry.fixes:
                entry.fixes[key] = server.linter.fix(outcome, finding)
            fixed, why = entry.fixes[key]
            unsafe = finding.applicability == "unsafe"
            title = f"{finding.code}: {finding.fix or finding.name}" + (
                " (unsafe)" if unsafe else ""
            )
            action = types.CodeAction(
                title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic]
            )
            if fixed is None:
                if not disabled_support:
                    continue
                action.disabled = types.CodeActionDisabled(reason=why)
            else:
                action.edit = _workspace_edit(server, uri, entry.version, outcome.text, fixed)
                action.is_preferred = not unsafe
            actions.append(action)
    if _wants(only, FIX_ALL) and any(
        f.applicability == "safe" and f.edits for f in outcome.all_findings
    ):
        action = types.CodeAction(
            title=FIX_ALL_TITLE, kind=FIX_ALL, data={"uri": uri, "version": entry.version}
        )
        resolve = bool(
            code_action_caps
            and code_action_caps.resolve_support
            and "edit" in code_action_caps.resolve_support.properties
        )
        if entry.fixed_all is not None or not resolve:
            action = _resolve_fix_all(server, action)  # else when chosen: it re-lints
        if action.edit is not None or entry.fixed_all is None:
            actions.append(action)
    return actions


def _resolve_fix_all(server: MoeLintServer, action: types.CodeAction) -> types.CodeAction:
    """ "Fix all" with its edit: the fix loop's text, computed once per version (it re-lints
    the text once per pass, so a client that can resolve an action's edit later gets it only
    when the action is chosen, not on every cursor move). No edit when the document changed
    since the action was offered, or when no fix applies."""
    data = action.data if isinstance(action.data, dict) else {}
    uri = data.get("uri")
    if not isinstance(uri, str) or uri not in server.workspace.text_documents:
        return action
    entry = _current(server, uri)
    if entry.version != data.get("version"):
        return action
    if entry.fixed_all is None:
        entry.fixed_all = server.linter.fix_all(entry.outcome)
    if entry.fixed_all != entry.outcome.text:
        action.edit = _workspace_edit(
            server, uri, entry.version, entry.outcome.text, entry.fixed_all
        )
    return action


def _hover(server: MoeLintServer, params: types.HoverParams) -> types.Hover | None:
    """The findings under the cursor (their rule's documentation and derivation), then the
    config field there (type, default, source, the rules that check it)."""
    entry = _current(server, params.text_document.uri)
    outcome = entry.outcome
    lines = _Lines(outcome.text, server.workspace.position_codec)
    line, character = lines.from_client(params.position)
    at = lines.position(line, character)
    parts = []
    for finding in outcome.findings:
        if _overlaps(_finding_range(finding, lines), types.Range(start=at, end=at)):
            parts.append(server.linter.finding_hover(outcome, finding))
    problem = outcome.problem
    if problem is not None and (problem.line is None or problem.line - 1 == line):
        parts.append(f"**moe-lint**: {problem.message}")  # a line-less one: the whole file
    described = server.linter.field_hover(outcome, line + 1, character + 1)
    if described:
        parts.append(described)
    if not parts:
        return None
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
        )
    )


def _code_lenses(server: MoeLintServer, uri: str) -> list[types.CodeLens]:
    """One lens per pipeline stage with its memory, where memory can be estimated."""
    entry = _current(server, uri)
    if entry.stages is None:
        entry.stages = server.linter.stages(entry.outcome)
    lines = _Lines(entry.outcome.text, server.workspace.position_codec)
    lenses = []
    for stage in entry.stages:
        at = lines.position(stage.line - 1, 0)
        lenses.append(
            types.CodeLens(
                range=types.Range(start=at, end=at),
                command=types.Command(
                    title=stage.title, command=SHOW_ESTIMATE, arguments=[stage.title]
                ),
            )
        )
    return lenses


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve one client over ``stdin``/``stdout`` (binary streams) until it exits."""
    create_server().start_io(stdin, stdout)
