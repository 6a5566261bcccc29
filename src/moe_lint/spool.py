"""Results of a big batch, kept on disk until the report reads them.

Linting 5,000 full Bridge dumps gave about 21,000 findings. Holding them as objects until the
report was written cost the parent about 7 kB per file (38 MiB more at 5,000 dumps than at
1,000), though the report reads one file's findings at a time. From ``SPOOL_AFTER`` files
on, each slim result is written as JSON into one anonymous temporary file as it arrives (a
worker sends it encoded; the parent only copies the bytes) and the run keeps a small
:class:`Spilled` handle in its place; ``cli/report.py`` loads results back one at a time, as
often as it needs them. Memory is then flat in the number of files, and the parent no longer
decodes every result while its workers are still linting.

JSON, not pickle: the package never unpickles (tests/test_rulecache.py), and what is read back
can only be data. A result encodes as lists in its records' field order (``__match_args__``),
with ``ensure_ascii`` so a file name's lone surrogates round-trip.

Where no temporary file can be made (no writable temporary directory), the encoded bytes stay
in memory: the run still works, as it did before spooling.
"""

from __future__ import annotations

from typing import IO, Any, NamedTuple

from moe_lint.config.load import Document, SpanMap
from moe_lint.engine.findings import Argument, Edit, Finding
from moe_lint.linting import FileResult

#: A batch of more files than this keeps its results on disk (a few hundred results are a
#: few MiB at most as objects, and smaller runs never import ``tempfile``).
SPOOL_AFTER = 256


class Spool:
    """An append-only store of encoded results in one anonymous temporary file."""

    def __init__(self) -> None:
        self._blobs: list[bytes] = []
        self._file: IO[bytes] | None = None
        self._end = 0
        # Lazy: tempfile (~4 ms of imports) only for a batch big enough to spool.
        import tempfile

        try:
            # Closed with the spool or the process; the file has no name to clean up.
            self._file = tempfile.TemporaryFile(prefix="moe-lint-")  # noqa: SIM115
        except OSError:
            self._file = None  # keep the bytes in memory instead

    def put(self, blob: bytes) -> Spilled:
        """Store one encoded result; its handle."""
        offset = self._end
        if self._file is None:
            offset = len(self._blobs)
            self._blobs.append(blob)
        else:
            self._file.seek(offset)
            self._file.write(blob)
            self._end += len(blob)
        return Spilled(self, offset, len(blob))

    def read(self, offset: int, length: int) -> bytes:
        if self._file is None:
            return self._blobs[offset]
        self._file.seek(offset)
        return self._file.read(length)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Spilled(NamedTuple):
    """Where one file's result lies in a :class:`Spool`."""

    spool: Spool
    offset: int
    length: int

    def load(self) -> FileResult:
        return decode(self.spool.read(self.offset, self.length))


_FINDING = Finding.__match_args__
_EDITS = _FINDING.index("edits")
_ARGUMENT = _FINDING.index("argument")


def encode(result: FileResult) -> bytes:
    """A slim result (``linting.slim``) as JSON: what a worker sends and a spool stores."""
    # Lazy: json (~3 ms) only for a batch (workers or a spool), never for one short file.
    import json

    doc = result.doc
    data = [
        result.path,
        result.error,
        result.notice,
        None if doc is None else [doc.path, doc.text, doc.had_bom],
        [[getattr(f, name) for name in _FINDING] for f in result.findings],
    ]
    return json.dumps(data, separators=(",", ":")).encode("ascii")


def decode(blob: bytes) -> FileResult:
    """The result :func:`encode` wrote."""
    # Lazy: json only for a batch, as in encode.
    import json

    path, error, notice, doc, rows = json.loads(blob)
    findings = [_finding(row) for row in rows]
    document = None
    if doc is not None:
        document = Document(path=doc[0], text=doc[1], data={}, spans=SpanMap(), had_bom=doc[2])
    return FileResult(path, findings, error, notice, document)


def _finding(row: list[Any]) -> Finding:
    row[_EDITS] = [Edit(*edit) for edit in row[_EDITS]]
    if row[_ARGUMENT] is not None:
        row[_ARGUMENT] = Argument(*row[_ARGUMENT])
    return Finding(*row)


def load(entry: FileResult | Spilled) -> FileResult:
    """The result itself, read back from its spool when it was spilled."""
    return entry.load() if isinstance(entry, Spilled) else entry
