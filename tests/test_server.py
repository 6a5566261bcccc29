"""``moe-lint server`` end to end: a real LSP client (pytest-lsp) drives ``python -m moe_lint
server`` as an editor would (issue 27).

The server must show what the CLI reports for the same file and settings: the diagnostics of
a full Bridge dump are compared with ``moe-lint FILE --format json`` (codes, severities,
lines, columns, messages), its quick fix and "fix all" with ``moe-lint FILE --fix``, and its
code lenses with ``moe-lint estimate --format json``. A half-typed file, hostile input and a
file past ``bounds.MAX_BYTES`` are each one E000 diagnostic, after which the server still
answers. A keystroke is linted once after the pause (``DEBOUNCE_S``), for the text of the
last one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from conftest import DUMPS, run_main  # noqa: E402
from moe_lint.bounds import MAX_BYTES  # noqa: E402
from moe_lint.server.protocol import DEBOUNCE_S, FIX_ALL  # noqa: E402

#: The async tests share the module's event loop (and so its one server, ``client``).
ASYNC = pytest.mark.asyncio(loop_scope="module")

#: A full Bridge 0.6.2 dump of DeepSeek-V3 (1,000 lines) at the size in its name, 64 H100s,
#: where the real Megatron-Core rejects it: PAR002 (the expert grid needs 512 GPUs).
DUMP = DUMPS / "deepseek_v3_pretrain_64gpu_h100_fp8cs_config.yaml"
#: Its TP is 2: turning sequence parallelism off is MOE003, whose fix (set it to true) is safe.
SP_ON = "  sequence_parallel: true"
SP_OFF = "  sequence_parallel: false"
#: A dump whose MOE028 warning has an unsafe fix (at its own size, 128 GB300s).
UNSAFE_DUMP = DUMPS / "deepseek_v3_pretrain_128gpu_gb300_fp8mx_hsdp_config.yaml"
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
SERVER = [sys.executable, "-m", "moe_lint", "server"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A configs repository: the dumps, and a pyproject.toml that gives their cluster."""
    root = tmp_path_factory.mktemp("configs")
    (root / "pyproject.toml").write_text(
        '[tool.moe-lint]\ngpus = 64\ngpu = "h100"\n\n'
        '[tool.moe-lint.per-file."gb300/*.yaml"]\ngpus = 128\ngpu = "gb300"\n'
    )
    shutil.copy(DUMP, root / "dsv3.yaml")
    (root / "gb300").mkdir()
    shutil.copy(UNSAFE_DUMP, root / "gb300" / "dsv3.yaml")
    return root


def _accept_registrations(client: LanguageClient) -> None:
    """Answer ``client/registerCapability`` as an editor does, keeping what was asked for
    in ``client.registered`` (pytest-lsp's client does not handle the request itself)."""
    client.registered = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(ls: LanguageClient, params: types.RegistrationParams) -> None:
        ls.registered.extend(params.registrations)  # type: ignore[attr-defined]


async def _start(
    root: Path, options: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> LanguageClient:
    """A server of its own (for options or an environment the shared one does not have)."""
    server_env = {**os.environ, **env} if env else None
    client = await ClientServerConfig(server_command=SERVER, server_env=server_env).start()
    _accept_registrations(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            initialization_options=options,
        )
    )
    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, project: Path) -> AsyncIterator[None]:
    """One server for the module (it starts in about a second): each test opens its own
    documents and closes them. The client keeps the registrations the server asks for."""
    _accept_registrations(lsp_client)
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=project.as_uri()
        )
    )
    yield
    await lsp_client.shutdown_session()


# ------------------------------------------------------------------------------ helpers


async def _diagnostics(
    client: LanguageClient, send: Any, uri: str, timeout: float = 20
) -> types.PublishDiagnosticsParams:
    """Do ``send()`` and return the next diagnostics published (for ``uri``)."""
    waiting = client.protocol.wait_for_notification_async(PUBLISH)
    send()
    params: types.PublishDiagnosticsParams = await asyncio.wait_for(waiting, timeout)
    assert params.uri == uri
    return params


async def _open(client: LanguageClient, path: Path, text: str | None = None) -> tuple[str, str]:
    """Open ``path`` (with ``text`` instead of its own); (uri, text)."""
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8") if text is None else text
    item = types.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)
    await _diagnostics(
        client, lambda: client.text_document_did_open(types.DidOpenTextDocumentParams(item)), uri
    )
    return uri, text


async def _close(client: LanguageClient, uri: str) -> None:
    """Close the document; the server clears its diagnostics (awaited, so that the next
    test's wait does not take that notification for its own)."""
    params = await _diagnostics(
        client,
        lambda: client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        ),
        uri,
    )
    assert not params.diagnostics


def _replace_line(text: str, old: str, new: str) -> types.TextDocumentContentChangePartial:
    """The incremental change an editor sends when ``old`` (a whole line) becomes ``new``."""
    line = text.splitlines().index(old)
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, 0), types.Position(line, len(old))), text=new
    )


def _change(
    client: LanguageClient,
    uri: str,
    version: int,
    changes: Sequence[types.TextDocumentContentChangeEvent],
) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version), list(changes)
        )
    )


#: A line and its break, as LSP counts lines (CRLF, LF or CR).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _units(char: str, encoding: str) -> int:
    """Code units of one character: UTF-16 (VS Code's) or UTF-8 (Neovim's)."""
    return len(char.encode("utf-8")) if encoding == "utf-8" else 2 if ord(char) > 0xFFFF else 1


def _offset(text: str, position: types.Position, encoding: str = "utf-16") -> int:
    """A client position (in ``encoding``'s units) as an index into ``text``."""
    lines = _LINE.findall(text)
    start = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = index = 0
    while index < len(line) and units < position.character:
        units += _units(line[index], encoding)
        index += 1
    return start + index


def _apply(text: str, edit: types.WorkspaceEdit | None, encoding: str = "utf-16") -> str:
    """What the editor's buffer holds after applying a code action's edit."""
    assert edit is not None and edit.document_changes
    (document_edit,) = edit.document_changes
    assert isinstance(document_edit, types.TextDocumentEdit)
    spans = [
        (_offset(text, e.range.start, encoding), _offset(text, e.range.end, encoding), e.new_text)
        for e in document_edit.edits
        if isinstance(e, types.TextEdit)
    ]
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _cli_json(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> list[dict[str, Any]]:
    _, out, _ = run_main(capsys, str(path), "--format", "json", *args)
    records: list[dict[str, Any]] = json.loads(out)
    return records


def _as_cli(d: types.Diagnostic) -> tuple[Any, ...]:
    severity = {1: "error", 2: "warning", 3: "info"}[d.severity or 1]
    return (d.code, severity, d.range.start.line + 1, d.range.start.character + 1)


# ---------------------------------------------------------------------------------- tests


@ASYNC
async def test_diagnostics_are_the_cli_findings(
    client: LanguageClient, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opening the dump publishes the findings ``moe-lint FILE`` reports with the same
    pyproject.toml (found beside the file): code, severity, line, column, message, the
    derivation, the docs link."""
    path = project / "dsv3.yaml"
    uri, _ = await _open(client, path)
    try:
        shown = list(client.diagnostics[uri])
        cli = _cli_json(capsys, path)
        assert [_as_cli(d) for d in shown] == [
            (f["code"], f["severity"], f["line"], f["column"]) for f in cli
        ]
        assert [f["code"] for f in cli] == ["PAR002"]  # the root cause Megatron-Core raises
        (diagnostic,) = shown
        assert diagnostic.message.startswith(cli[0]["message"].split(" [")[0])
        assert f"derived: {cli[0]['derivation']}" in diagnostic.message
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href == cli[0]["url"]
        assert (diagnostic.range.end.line + 1, diagnostic.range.end.character + 1) == (
            cli[0]["end_line"], cli[0]["end_column"]
        )  # fmt: skip
    finally:
        await _close(client, uri)


@ASYNC
async def test_directives_in_the_file_are_honoured(
    client: LanguageClient, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``# moe-lint: gpus=512`` directive is the file's world over the pyproject's (PAR002
    goes), and a suppression comment hides its finding, as in the CLI."""
    for name, head in (
        ("directive", "# moe-lint: gpus=512\n"),
        ("suppressed", "# moe-lint: disable-file=PAR002 -- 64 GPUs on purpose\n"),
    ):
        path = project / f"dsv3-{name}.yaml"
        path.write_text(head + DUMP.read_text())
        uri, _ = await _open(client, path)
        try:
            shown = [_as_cli(d) for d in client.diagnostics[uri]]
            cli = _cli_json(capsys, path)
            assert shown == [(f["code"], f["severity"], f["line"], f["column"]) for f in cli]
            assert "PAR002" not in {code for code, *_ in shown}
        finally:
            await _close(client, uri)
            path.unlink()


@ASYNC
async def test_a_changed_pyproject_relints_the_open_files(
    client: LanguageClient, project: Path
) -> None:
    """The server asks the editor to watch pyproject.toml files; when one changes, every
    open config is linted again with its new settings (512 GPUs: PAR002 goes)."""

    def watched() -> list[str]:
        return [
            w["globPattern"]  # register_options arrive as plain JSON
            for r in client.registered  # type: ignore[attr-defined]
            if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
            for w in r.register_options["watchers"]
        ]

    # The server registers the watcher after `initialized`, on its own time: when this test
    # runs first (alone, or first in its file) the request may not have arrived yet.
    for _ in range(100):
        if watched():
            break
        await asyncio.sleep(0.02)
    assert watched() == ["**/pyproject.toml"]
    settings = project / "pyproject.toml"
    before = settings.read_text()
    uri, _ = await _open(client, project / "dsv3.yaml")

    def changed() -> None:
        event = types.FileEvent(uri=settings.as_uri(), type=types.FileChangeType.Changed)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams([event]))

    try:
        assert [d.code for d in client.diagnostics[uri]] == ["PAR002"]
        settings.write_text(before.replace("gpus = 64", "gpus = 512"))
        params = await _diagnostics(client, changed, uri)
        assert "PAR002" not in {d.code for d in params.diagnostics}
    finally:
        settings.write_text(before)
        params = await _diagnostics(client, changed, uri)
        assert [d.code for d in params.diagnostics] == ["PAR002"]
        await _close(client, uri)


@ASYNC
async def test_an_edit_is_linted_after_the_pause(
    client: LanguageClient, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A change introduces MOE003 (and what follows from it, as the CLI reports for that
    text); changing it back removes them. A burst of changes is linted once, for the last
    text: no diagnostics of an intermediate version are published."""
    path = project / "dsv3.yaml"
    uri, text = await _open(client, path)
    try:
        broken = text.replace(SP_ON, SP_OFF)
        started = time.perf_counter()
        params = await _diagnostics(
            client, lambda: _change(client, uri, 2, [_replace_line(text, SP_ON, SP_OFF)]), uri
        )
        latency = time.perf_counter() - started
        assert params.version == 2
        on_disk = project / "dsv3-sp-off.yaml"
        on_disk.write_text(broken)
        assert [_as_cli(d) for d in params.diagnostics] == [
            (f["code"], f["severity"], f["line"], f["column"]) for f in _cli_json(capsys, on_disk)
        ]
        assert "MOE003" in {d.code for d in params.diagnostics}
        assert DEBOUNCE_S <= latency < 3, latency  # after the pause, not per keystroke
        print(f"keystroke -> diagnostics on a full dump: {latency * 1000:.0f} ms")

        def burst() -> None:
            """Three keystrokes' changes at once: on, off, on again."""
            for version in (3, 4, 5):
                old, new = (SP_OFF, SP_ON) if version % 2 else (SP_ON, SP_OFF)
                current = broken if version % 2 else text
                _change(client, uri, version, [_replace_line(current, old, new)])

        params = await _diagnostics(client, burst, uri)
        assert params.version == 5  # only the last text was linted and published
        assert "MOE003" not in {d.code for d in params.diagnostics}
        assert [d.code for d in params.diagnostics] == ["PAR002"]
    finally:
        await _close(client, uri)
        (project / "dsv3-sp-off.yaml").unlink(missing_ok=True)


@ASYNC
async def test_quick_fix_and_fix_all_are_what_fix_writes(
    client: LanguageClient, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MOE003 quick fix is preferred, edits only the value, and gives the text
    ``moe-lint FILE --fix`` writes; so does "fix all"."""
    path = project / "dsv3.yaml"
    uri, text = await _open(client, path)
    try:
        broken = text.replace(SP_ON, SP_OFF)
        params = await _diagnostics(
            client, lambda: _change(client, uri, 2, [_replace_line(text, SP_ON, SP_OFF)]), uri
        )
        (moe003,) = [d for d in params.diagnostics if d.code == "MOE003"]
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=moe003.range,
                context=types.CodeActionContext(diagnostics=[moe003]),
            )
        )
        assert actions is not None
        by_kind = {a.kind: a for a in actions if isinstance(a, types.CodeAction)}
        quick = by_kind[types.CodeActionKind.QuickFix]
        assert quick.is_preferred and "(unsafe)" not in quick.title
        assert quick.title.startswith("MOE003")
        fixed_file = project / "dsv3-fix.yaml"
        fixed_file.write_text(broken)
        code, _, _ = run_main(capsys, str(fixed_file), "--fix")
        assert code == 1  # PAR002 stays: it has no fix
        expected = fixed_file.read_text()
        assert expected != broken
        assert _apply(broken, quick.edit) == expected
        assert quick.edit is not None and quick.edit.document_changes
        (document_edit,) = quick.edit.document_changes
        assert isinstance(document_edit, types.TextDocumentEdit)
        assert document_edit.text_document.version == 2
        assert all(e.range.start.line == e.range.end.line for e in document_edit.edits)
        # "Fix all" re-lints until nothing changes: a client that resolves edits (VS Code)
        # gets its edit only when it is chosen.
        fix_all = by_kind[FIX_ALL]
        assert fix_all.edit is None
        resolved = await client.code_action_resolve_async(fix_all)
        assert _apply(broken, resolved.edit) == expected
        # Asked only for "fix all" (an editor's fix-on-save), it is the only action.
        only = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                context=types.CodeActionContext(
                    diagnostics=[], only=[types.CodeActionKind.SourceFixAll]
                ),
            )
        )
        assert only is not None and [a.kind for a in only] == [FIX_ALL]  # type: ignore[union-attr]
        # Computed once for this version, it now comes with its edit.
        assert _apply(broken, only[0].edit) == expected  # type: ignore[union-attr]
    finally:
        await _close(client, uri)
        (project / "dsv3-fix.yaml").unlink(missing_ok=True)


@ASYNC
async def test_an_unsafe_fix_is_offered_marked_and_not_preferred(
    client: LanguageClient, project: Path
) -> None:
    """MOE028's fix is unsafe: offered, titled "(unsafe)", never preferred; "fix all"
    (safe fixes only, like ``--fix``) is not offered for it."""
    uri, text = await _open(client, project / "gb300" / "dsv3.yaml")
    try:
        (moe028,) = [d for d in client.diagnostics[uri] if d.code == "MOE028"]
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=moe028.range,
                context=types.CodeActionContext(diagnostics=[moe028]),
            )
        )
        assert actions is not None
        (action,) = actions
        assert isinstance(action, types.CodeAction)
        assert action.title.endswith("(unsafe)") and not action.is_preferred
        assert _apply(text, action.edit) != text
    finally:
        await _close(client, uri)


@ASYNC
async def test_hover_on_a_finding_and_on_a_field(client: LanguageClient, project: Path) -> None:
    """On a finding: its rule, derivation and the rule's documentation (``moe-lint
    explain``); on a key: the field's type, default, defining source and the rules that
    check it."""
    uri, text = await _open(client, project / "dsv3.yaml")
    try:
        (par002,) = client.diagnostics[uri]
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), par002.range.start)
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        value = hover.contents.value
        assert "**PAR002** `world-not-divisible-by-expert-mesh`" in value
        assert "derived: world = 64 GPUs" in value
        assert "## What it does" in value and "## Why is this bad?" in value
        line = text.splitlines().index("  context_parallel_size: 1")
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, 6))
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        value = hover.contents.value
        assert value.startswith("**model.context_parallel_size**: `int`")
        assert "ModelParallelConfig" in value and "Default: 1." in value
        assert "Here: `1`." in value and "PAR001 `world-not-divisible-by-dense-mesh`" in value
        blank = text.splitlines().index("model:") - 1
        nothing = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(blank, 200))
        )
        assert nothing is None or "**" in nothing.contents.value  # type: ignore[union-attr]
    finally:
        await _close(client, uri)


@ASYNC
async def test_a_code_lens_per_pipeline_stage(
    client: LanguageClient, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One lens per pipeline stage at ``pipeline_model_parallel_size``, with the numbers
    ``moe-lint estimate`` gives for the same file and settings."""
    path = project / "dsv3.yaml"
    uri, text = await _open(client, path)
    try:
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        code, out, _ = run_main(capsys, "estimate", str(path), "--format", "json")
        assert code in (0, 1)
        (estimate,) = json.loads(out)
        assert lenses is not None and len(lenses) == len(estimate["stages"]) == 8
        line = text.splitlines().index("  pipeline_model_parallel_size: 8")
        for lens, stage in zip(lenses, estimate["stages"], strict=True):
            assert lens.range.start.line == line and lens.command is not None
            assert lens.command.title.startswith(
                f"PP stage {stage['stage']}: {stage['total_gib']:.1f} GiB of "
                f"{estimate['usable_gib']:.1f} usable (allocated {stage['allocated_gib']:.1f}, "
                f"reserved {stage['reserved_gib']:.1f}"
            )
        worst = lenses[estimate["worst_stage"]].command
        assert worst is not None and worst.title.endswith(f": {estimate['verdict']}")
    finally:
        await _close(client, uri)


@ASYNC
async def test_a_half_typed_file_is_one_diagnostic_and_the_server_goes_on(
    client: LanguageClient, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Typing ``[`` into the dump makes it invalid YAML: one E000 diagnostic at the line the
    CLI names, with its message; hover and code actions still answer, and closing the
    bracket brings the findings back."""
    path = project / "dsv3.yaml"
    uri, text = await _open(client, path)
    try:
        half = text.replace(SP_ON, "  sequence_parallel: [tru")
        params = await _diagnostics(
            client,
            lambda: _change(client, uri, 2, [_replace_line(text, SP_ON, half.splitlines()[669])]),
            uri,
        )
        broken_file = project / "dsv3-half.yaml"
        broken_file.write_text(half)
        (cli,) = _cli_json(capsys, broken_file)
        (diagnostic,) = params.diagnostics
        assert (diagnostic.code, diagnostic.message) == ("E000", cli["message"])
        assert diagnostic.range.start.line + 1 == cli["line"]
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), diagnostic.range.start)
        )
        assert hover is not None and cli["message"] in hover.contents.value  # type: ignore[union-attr]
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri),
                diagnostic.range,
                types.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        assert actions is not None and len(actions) == 0
        params = await _diagnostics(
            client,
            lambda: _change(client, uri, 3, [_replace_line(half, half.splitlines()[669], SP_ON)]),
            uri,
        )
        assert [d.code for d in params.diagnostics] == ["PAR002"]
    finally:
        await _close(client, uri)
        (project / "dsv3-half.yaml").unlink(missing_ok=True)


HOSTILE = {
    "billion-laughs": (
        'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
        + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
        + "model: {context_parallel_size: *a9}\n",
        "alias expansion",
    ),
    "python-tag": ("model: !!python/object/apply:os.system ['touch /tmp/pwned']\n", "tag"),
    "nul-byte": ("model:\n  context_parallel_size: 8\x00\n", "binary data"),
    "deep-nesting": ("model: " + "[" * 10_000 + "]" * 10_000 + "\n", "nesting"),
    "two-documents": ("model: {}\n---\ntrain: {}\n", "more than one YAML document"),
}


@ASYNC
async def test_hostile_input_is_one_diagnostic(client: LanguageClient, project: Path) -> None:
    """A YAML bomb, a ``!!python`` tag, a NUL byte, 10,000-deep nesting, two documents:
    each one E000 diagnostic saying what is wrong, quickly, and nothing executed."""
    for name, (text, needle) in HOSTILE.items():
        started = time.perf_counter()
        uri, _ = await _open(client, project / f"hostile-{name}.yaml", text)
        try:
            (diagnostic,) = client.diagnostics[uri]
            assert diagnostic.code == "E000" and needle in diagnostic.message, name
            assert time.perf_counter() - started < 5, name
        finally:
            await _close(client, uri)
    assert not Path("/tmp/pwned").exists()


@ASYNC
async def test_a_file_past_the_size_bound_is_one_diagnostic(
    client: LanguageClient, project: Path
) -> None:
    """9 MiB of text (bounds.MAX_BYTES is 8 MiB): one E000 diagnostic naming the limit, as
    ``moe-lint FILE`` says it, within seconds; edits to it are answered the same way."""
    size = MAX_BYTES + 2**20
    text = "model:\n  context_parallel_size: 8\n" + ("# " + "x" * 1022 + "\n") * (size // 1024)
    started = time.perf_counter()
    uri, _ = await _open(client, project / "huge.yaml", text)
    try:
        elapsed = time.perf_counter() - started
        (diagnostic,) = client.diagnostics[uri]
        assert diagnostic.code == "E000"
        assert diagnostic.message == (
            f"file is too large ({len(text.encode()):,} bytes; limit {MAX_BYTES:,})"
        )
        assert elapsed < 10, elapsed
        print(f"9 MiB file -> its one diagnostic: {elapsed * 1000:.0f} ms")
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(1, 4))
        )
        assert hover is not None and "too large" in hover.contents.value  # type: ignore[union-attr]
    finally:
        await _close(client, uri)


@ASYNC
async def test_initialization_options_are_the_command_line(project: Path) -> None:
    """``gpus`` in initializationOptions overrides the pyproject's, as ``--gpus`` does (512
    GPUs hold the expert grid: PAR002 goes); workspace settings replace them, and an unknown
    option there is one settings diagnostic on every file, not a silently ignored setting."""
    path = project / "dsv3.yaml"
    client = await _start(project, {"gpus": 512, "gpu": "h100"})
    try:
        uri, _ = await _open(client, path)
        assert "PAR002" not in {d.code for d in client.diagnostics[uri]}

        def configure(settings: dict[str, Any]) -> Any:
            params = types.DidChangeConfigurationParams(settings={"moe-lint": settings})
            return lambda: client.workspace_did_change_configuration(params)

        params = await _diagnostics(client, configure({"gpuz": 512}), uri)
        (diagnostic,) = params.diagnostics
        assert diagnostic.code is None and "unknown option(s) 'gpuz'" in diagnostic.message
        params = await _diagnostics(client, configure({"gpusPerNode": 8, "nodes": 8}), uri)
        assert [d.code for d in params.diagnostics] == ["PAR002"]  # 64 GPUs again
    finally:
        await client.shutdown_session()
        await client.stop()


@ASYNC
async def test_a_lint_past_the_time_limit_is_one_diagnostic(project: Path) -> None:
    """The per-file time limit holds in the server (MOE_LINT_FILE_TIMEOUT, a SIGALRM timer in
    its main thread): a lint that runs past it is the CLI's one-line error, not a hung
    server, and the next request is still answered."""
    client = await _start(project, env={"MOE_LINT_FILE_TIMEOUT": "0.001"})
    try:
        uri, _ = await _open(client, project / "dsv3.yaml")
        (diagnostic,) = client.diagnostics[uri]
        assert diagnostic.code == "E000"
        assert diagnostic.message.startswith("linting it took longer than 0.001 s")
        hover = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0))
        )
        assert hover is not None and "took longer" in hover.contents.value  # type: ignore[union-attr]
    finally:
        await client.shutdown_session()
        await client.stop()


def test_without_pygls_the_command_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``moe-lint server`` where pygls is not installed: one line naming the extra, exit 2."""
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in ("pygls", "lsprotocol") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    code, out, err = run_main(capsys, "server")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "install moe-lint[server]" in err


def test_text_edits_in_utf16_and_crlf() -> None:
    """The edits a code action sends, in the client's units: a character outside the BMP
    counts two UTF-16 units (four UTF-8 ones, for a client that chose UTF-8), CRLF and CR end
    lines, and applying the edits gives the text."""
    from pygls.workspace import PositionCodec

    from moe_lint.server.protocol import _Lines, text_edits

    cases = [
        ("model:\r\n  a: \U0001f600 1\r\n  b: 2\r\n", "model:\r\n  a: \U0001f600 7\r\n  b: 2\r\n"),
        ("x: 1\ry: \U0001f600\rz: 3\r", "x: 1\ry: \U0001f600\rz: 4\rw: 5\r"),
        ("a: 1\nb: 2\nc: 3\n", "a: 1\nc: 3\n"),
        ("a: 1\nb: 2\n", "z: 0\na: 1\nb: 9\n"),
        ("same\n", "same\n"),
    ]
    for encoding in ("utf-16", "utf-8"):
        codec = PositionCodec(types.PositionEncodingKind(encoding))
        for before, after in cases:
            edits = text_edits(before, after, _Lines(before, codec))
            document = types.TextDocumentEdit(
                types.OptionalVersionedTextDocumentIdentifier(uri="file:///x", version=1), edits
            )
            edit = types.WorkspaceEdit(document_changes=[document])
            assert _apply(before, edit, encoding) == after, (encoding, before)
            assert (before == after) == (edits == [])
        (edit,) = text_edits(cases[0][0], cases[0][1], _Lines(cases[0][0], codec))
        column = {"utf-16": 8, "utf-8": 10}[encoding]  # "  a: " + the emoji + " "
        assert (edit.range.start.line, edit.range.start.character, edit.new_text) == (
            1, column, "7"
        )  # fmt: skip


@pytest.mark.slow
@ASYNC
async def test_keystroke_to_diagnostics_within_300_ms(
    client: LanguageClient, project: Path
) -> None:
    """Issue 27's bar: on a full dump, diagnostics arrive within 300 ms of the keystroke
    pause (the median of 10 edits, the debounce included)."""
    uri, text = await _open(client, project / "dsv3.yaml")
    try:
        latencies = []
        current = text
        for version in range(2, 12):
            old, new = (SP_ON, SP_OFF) if SP_ON in current.splitlines() else (SP_OFF, SP_ON)
            change = _replace_line(current, old, new)
            started = time.perf_counter()
            await _diagnostics(
                client, lambda c=change, v=version: _change(client, uri, v, [c]), uri
            )
            latencies.append(time.perf_counter() - started)
            current = current.replace(old, new)
        print(
            f"keystroke -> diagnostics, 10 edits: median {statistics.median(latencies) * 1000:.0f}"
            f" ms, max {max(latencies) * 1000:.0f} ms"
        )
        assert statistics.median(latencies) < 0.3, latencies
    finally:
        await _close(client, uri)
