"""Files named on the command line, checked before they are read or written. No torch here.

Reading: only a regular file. A FIFO would block the read forever (`--prompts-file`, `serve-sim --trace`), a
device never ends (/dev/zero) or has side effects, a folder cannot be read. The path is checked with stat
before it is opened, then opened non-blocking (a FIFO swapped in after the stat does not block the open) and
checked again on the open descriptor.

Writing: never into the system's device and kernel folders (/dev, /proc, /sys, after following links): as
root, `trace --out /dev/full.zip` would write there. The target must not exist as something else than what
is written (a file for a .zip, a folder for a trace folder), and its nearest existing folder must be a folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from llmviz.errors import ConfigError

SYSTEM_FOLDERS = (Path("/dev"), Path("/proc"), Path("/sys"))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"  # a door, a whiteout: whatever it is, not something to read or replace


def read_regular(path, limit: int, what: str, error: type = ConfigError) -> bytes:
    """At most limit + 1 bytes of the regular file `path` (the caller refuses more than `limit`); `error` (a
    ConfigError by default) for anything else: no such file, a FIFO, a device, a folder, a NUL in the name."""
    name = os.fspath(path)
    if "\x00" in name:
        raise error(f"{what}: a file name cannot hold a NUL byte")
    try:
        before = os.stat(name)
        if not stat.S_ISREG(before.st_mode):
            raise error(f"{what} {name!r} is {_kind(before.st_mode)}: give a regular file")
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise error(f"cannot read {what} {name!r}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as f:
        now = os.fstat(f.fileno())
        if not stat.S_ISREG(now.st_mode):  # replaced between the stat and the open
            raise error(f"{what} {name!r} is {_kind(now.st_mode)}: give a regular file")
        try:
            return f.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what} {name!r}: {exc.strerror or exc}") from exc


def check_output(path, what: str, folder: bool = False) -> Path:
    """Where the command line may write `path` (a file, or with `folder` a folder it creates): the path, or a
    ConfigError saying why not."""
    name = os.fspath(path)
    if not name.strip() or "\x00" in name:
        raise ConfigError(f"{what} needs a file or folder name without NUL bytes")
    target = Path(os.path.realpath(name))  # links followed: /tmp/link -> /dev is /dev
    for system in SYSTEM_FOLDERS:
        if target == system or system in target.parents:
            raise ConfigError(f"{what} {name!r} is inside {system}, the system's device and kernel files: "
                              "write to an ordinary folder")
    if os.path.lexists(target):
        mode = os.stat(target).st_mode
        if not (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
            raise ConfigError(f"{what} {name!r} exists and is {_kind(mode)}: name a new "
                              f"{'folder' if folder else 'file'} or an existing one to replace")
    ancestor = target.parent
    while not os.path.lexists(ancestor):
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"{what} {name!r} lies under {str(ancestor)!r}, which is not a folder")
    return target
