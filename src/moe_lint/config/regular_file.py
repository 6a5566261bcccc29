"""Reading one file's bytes safely: only a regular file, at most a bound's worth.

Its own module because every reader needs it (configs in load.py, settings, baselines) and
settings.py sits below load.py in the import graph: load.py -> bridge_launch.py -> settings.py.
"""

from __future__ import annotations

import os
import stat

from moe_lint.bounds import MAX_BYTES
from moe_lint.errors import InputError


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):  # fmt: skip
        if test(mode):
            return name
    return "not a file"


def read_file(path: str, limit: int = MAX_BYTES) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (the caller refuses more).

    Only regular files are read: a FIFO, a terminal or ``/dev/zero`` would block or never end.
    ``O_NONBLOCK`` keeps ``open()`` itself from waiting for a FIFO's writer; ``fstat`` decides.
    Raises :class:`InputError` with a one-line reason (no such file, permission denied, not a
    regular file, ...), without the path: the caller names the file.
    """
    try:
        if os.path.isdir(path):
            raise InputError("is a directory, not a file")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb", closefd=True) as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise InputError(f"not a regular file ({_file_kind(mode)}); only files are read")
            return handle.read(limit + 1)
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("no such file") from None
    except PermissionError:
        raise InputError("permission denied") from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    except ValueError:  # a NUL in the name (the API; argv cannot hold one)
        raise InputError("cannot read: the file name holds a NUL character") from None
