"""Where a class's SQLite store may live: a folder and a file that no other local user can
read, replace or redirect. A store holds the teacher keys' hashes and the student ids that act as a student.

The default store is `class.db` in this user's state folder: `$XDG_STATE_HOME/llmviz` when XDG_STATE_HOME is an
absolute path, else `~/.local/state/llmviz`. Earlier versions kept it in `$TMPDIR/llmviz-class`, a folder any user
of the machine could make first. `prepare` runs on every open of a `sqlite:///` store (`stores.open_store`), the
default's and a path set in LLMVIZ_CLASS_STORE alike:

- an absent folder is made: its parents as usual, itself with mode 0700, set again after (umask is not trusted);
- the default folder must be a folder (not a symbolic link), owned by this user (the effective uid), with no
  permission bit for group or others;
- a folder named in LLMVIZ_CLASS_STORE is checked where its links lead, and SQLite opens it there: it must be this
  user's and not writable by group or others. Readable is the user's choice (a 0755 /srv/llmviz: the file itself is
  0600); writable is not (whoever writes the folder can swap the file, or plant a `-wal` link beside it), /tmp
  included;
- the file is made 0600 (O_EXCL|O_NOFOLLOW) before SQLite opens it; one that exists must be a regular file of this
  user's, never a symbolic link. Group or other bits on a file of ours are removed, not refused: the file is ours,
  and an earlier version made its store 0644 under LLMVIZ_CLASS_STORE. The `-wal`, `-shm` and `-journal` files
  beside it, where present, pass the same checks; SQLite makes them with the database's own mode (0600).

Anything else raises UnsafeStoreError, whose message names the place, its owner or mode, and what to do. The old
temporary store is never opened (it may be someone else's): its presence is logged once per process, and nothing is
moved from it, as a class lasts a day at most. Without POSIX owners (Windows) the folder is made, nothing checked.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import NoReturn

from llmviz.errors import ConfigError, UnsafeStoreError

STORE_ENV = "LLMVIZ_CLASS_STORE"
NAME = "class.db"
COMPANIONS = ("-wal", "-shm", "-journal")  # SQLite's files beside the database
FOLDER_MODE, FILE_MODE = 0o700, 0o600
POSIX = hasattr(os, "geteuid")  # owners and modes to check
ELSEWHERE = f"set {STORE_ENV}=sqlite:///<a folder of yours>/{NAME}"
log = logging.getLogger(__name__)


def state_folder() -> Path:
    """This user's llmviz state folder, the default store's."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return Path(os.path.abspath(base / "llmviz"))


def default_store() -> Path:
    return state_folder() / NAME


def old_folder() -> Path:
    """Where earlier versions kept the default store (a shared temporary folder)."""
    return Path(tempfile.gettempdir()) / "llmviz-class"


@functools.cache
def note_old_store() -> bool:
    """Whether an earlier version's temporary store is there; said once per process in the log, never opened."""
    old = old_folder()
    if not os.path.lexists(old):
        return False
    log.warning("%s is an earlier llmviz version's class store: classes there are no longer used (the store is now "
                "%s), and it is not opened (it may be another user's). A class lasts a day at most, so nothing is "
                "moved; if it is yours, it can be deleted: rm -r %s", old / NAME, default_store(), old)
    return True


def prepare(path: str | os.PathLike) -> Path:
    """The path SQLite opens for the store at `path`, its folder and file made and checked (the module's rule)."""
    if not str(path) or str(path).endswith(("/", os.sep)):
        raise ConfigError(f"a SQLite class store is a file, sqlite:///path/to/{NAME}; got {str(path)!r}")
    db = Path(os.path.abspath(path))
    own = db.parent == state_folder()
    _make_folder(db.parent)
    if not POSIX:
        return db
    folder = _own_folder(db.parent) if own else _named_folder(db.parent)
    target = folder / db.name
    _make_file(target)
    for suffix in ("", *COMPANIONS):
        _check_file(folder / (db.name + suffix))
    return target


def _make_folder(folder: Path) -> None:
    if os.path.lexists(folder):
        return
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(folder, FOLDER_MODE)
    except FileExistsError:  # another replica made it in between: checked below as any other
        return
    except OSError as exc:
        raise ConfigError(f"the class store's folder {folder} cannot be made ({exc.strerror or exc}): "
                          f"{ELSEWHERE}") from exc
    if not POSIX:
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchmod(fd, FOLDER_MODE)  # a umask that took the owner's bits too
    finally:
        os.close(fd)


def _own_folder(folder: Path) -> Path:
    """The default folder: a real folder of this user's, closed to group and others."""
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):
        _refuse(folder, f"is a symbolic link (to {os.readlink(folder)}), which another user may have made",
                f"remove the link (rm {folder}; a private folder is made in its place), or {ELSEWHERE}")
    if not stat.S_ISDIR(st.st_mode):
        _refuse(folder, "is not a folder", f"move it away, or {ELSEWHERE}")
    _check_owner(folder, st, "folder")
    if st.st_mode & 0o077:
        _refuse(folder, f"has mode {_mode(st)}: group or others could read or change the classes in it",
                f"run chmod 700 {folder}, or {ELSEWHERE}")
    return folder


def _named_folder(folder: Path) -> Path:
    """A folder named in LLMVIZ_CLASS_STORE, where its links lead: this user's, not writable by group or others."""
    real = Path(os.path.realpath(folder))
    st = os.stat(real)
    if not stat.S_ISDIR(st.st_mode):
        _refuse(real, "is not a folder", ELSEWHERE)
    _check_owner(real, st, "folder")
    if st.st_mode & 0o022:
        shared = st.st_mode & stat.S_ISVTX  # /tmp and its kind: not a folder to close
        _refuse(real, f"has mode {_mode(st)}: others can write in it, so they could replace or redirect the store",
                ELSEWHERE if shared else f"run chmod 700 {real}, or {ELSEWHERE}")
    return real


def _make_file(path: Path) -> None:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:  # a store of before, another replica's, or a link: checked next
        return
    try:
        os.fchmod(fd, FILE_MODE)  # SQLite takes an empty file as a new database
    finally:
        os.close(fd)


def _check_file(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:  # a -wal or -shm not made yet
        return
    if stat.S_ISLNK(st.st_mode):
        _refuse(path, f"is a symbolic link (to {os.readlink(path)}): the store's writes would go there",
                f"remove it (rm {path}), or {ELSEWHERE}", what="file")
    if not stat.S_ISREG(st.st_mode):
        _refuse(path, "is not a regular file", f"remove it, or {ELSEWHERE}", what="file")
    _check_owner(path, st, "file")
    if st.st_mode & 0o077:
        # Ours, opened wider by an earlier version (SQLite's own 0644): closed, not refused. The folder passed its
        # checks, so no one else can swap the name between lstat and chmod.
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
        log.info("the class store's file %s had mode %s; now %o", path, _mode(st), stat.S_IMODE(st.st_mode) & ~0o077)


def _check_owner(place: Path, st: os.stat_result, what: str) -> None:
    me = os.geteuid()
    if st.st_uid != me:
        _refuse(place, f"belongs to {_user(st.st_uid)}, not to this user ({_user(me)}): its owner could read every "
                       "class in it (teacher keys, student ids) or replace it",
                f"{ELSEWHERE}, or have its owner remove it", what=what)


def _refuse(place: Path, problem: str, fix: str, what: str = "folder") -> NoReturn:
    raise UnsafeStoreError(f"the class store's {what} {place} {problem}; {fix}", place=str(place))


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"
