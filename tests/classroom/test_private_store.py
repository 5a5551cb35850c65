"""The class store's place: the default store is a file of this user's, 0600, in a 0700
folder of this user's state folder; a folder or file that another user could read, replace or redirect is refused
with UnsafeStoreError naming it; the old store in the temporary folder is noted once and never opened. Modes and
owners are read back from the OS (os.stat), not from the code's own constants. The suite runs as root (here and on
CI): a folder of another user's is made with os.chown to uid 65534, skipped for an ordinary user."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest

from llmviz.classroom import classes, private_dir
from llmviz.classroom.stores import STORE_ENV, open_store, store_url
from llmviz.cli.main import main
from llmviz.errors import ConfigError, UnsafeStoreError

OTHER = 65534  # nobody
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user (os.chown) needs root")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    """The default store's folder under a fresh XDG_STATE_HOME (not made yet), with no LLMVIZ_CLASS_STORE."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv(STORE_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the old store's place, empty
    private_dir.note_old_store.cache_clear()
    yield tmp_path / "state" / "llmviz"
    private_dir.note_old_store.cache_clear()


def refused(url: str, *words: str) -> str:
    with pytest.raises(UnsafeStoreError) as err:
        open_store(url)
    assert isinstance(err.value, ConfigError)  # the CLI's one line, the page's message
    message = str(err.value)
    for word in words:
        assert word in message, message
    return message


def test_the_default_store_is_private(state):
    assert store_url() == f"sqlite:///{state / 'class.db'}"
    store = open_store(store_url())
    code, _ = classes.start(store)
    assert mode(state) == 0o700 and mode(state / "class.db") == 0o600
    assert os.stat(state).st_uid == os.geteuid() == os.stat(state / "class.db").st_uid
    assert stat.S_ISREG(os.lstat(state / "class.db").st_mode) and open_store(store_url()).get(code) is not None


def test_without_xdg_state_home_it_is_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(STORE_ENV, raising=False)
    for xdg in (None, "relative/state"):  # a relative XDG_STATE_HOME is ignored, as the spec says
        if xdg is None:
            monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_STATE_HOME", xdg)
        assert store_url() == f"sqlite:///{tmp_path / 'home' / '.local' / 'state' / 'llmviz' / 'class.db'}"
    open_store(store_url())
    assert mode(tmp_path / "home" / ".local" / "state" / "llmviz") == 0o700


def test_umask_is_not_trusted(state):
    state.parent.mkdir()
    old = os.umask(0o277)  # would make the folder 0500 and the file 0400
    try:
        open_store(store_url())
    finally:
        os.umask(old)
    assert mode(state) == 0o700 and mode(state / "class.db") == 0o600


def test_sqlite_gives_its_wal_and_shm_the_databases_mode(state):
    """SQLite makes -wal and -shm with the database's own mode, not from the umask (0: would be 0644 or wider)."""
    old = os.umask(0)
    try:
        store = open_store(store_url())
        code, _ = classes.start(store)
        db = sqlite3.connect(state / "class.db", isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE classes SET step = step WHERE code = ?", (code,))
            db.execute("COMMIT")  # the connection stays open: its -wal and -shm stay
            assert sorted(os.listdir(state)) == ["class.db", "class.db-shm", "class.db-wal"]
            assert {name: mode(state / name) for name in os.listdir(state)} == dict.fromkeys(os.listdir(state), 0o600)
        finally:
            db.close()
    finally:
        os.umask(old)


@pytest.mark.parametrize("wide", [0o750, 0o755, 0o777], ids=oct)
def test_a_default_folder_open_to_others_is_refused(state, wide):
    state.mkdir(parents=True)
    os.chmod(state, wide)
    refused(store_url(), str(state), f"{wide:04o}", f"chmod 700 {state}", STORE_ENV)
    assert os.listdir(state) == []  # no file made in it


@as_root
def test_a_default_folder_of_another_user_is_refused(state):
    state.mkdir(parents=True, mode=0o700)
    os.chown(state, OTHER, OTHER)
    refused(store_url(), str(state), f"uid {OTHER}", STORE_ENV)
    assert os.listdir(state) == []


def test_a_default_folder_that_is_a_link_is_refused(state, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)  # a private folder of ours: the link is refused all the same
    state.parent.mkdir()
    state.symlink_to(elsewhere)
    refused(store_url(), str(state), "symbolic link", str(elsewhere))
    assert os.listdir(elsewhere) == []


@pytest.mark.parametrize("where", ["default", "named"])
@pytest.mark.parametrize("name", ["class.db", "class.db-wal"])
def test_a_store_file_that_is_a_link_is_refused_and_its_target_left_alone(state, tmp_path, monkeypatch, where, name):
    folder = state if where == "default" else tmp_path / "named"
    folder.mkdir(parents=True, mode=0o700)
    if where == "named":
        monkeypatch.setenv(STORE_ENV, f"sqlite:///{folder / 'class.db'}")
    absent, kept = tmp_path / "absent.db", tmp_path / "kept"
    kept.write_bytes(b"someone's file")
    before = os.stat(kept)
    (folder / name).symlink_to(absent)
    refused(store_url(), str(folder / name), "symbolic link")
    assert not absent.exists()
    (folder / name).unlink()
    (folder / name).symlink_to(kept)
    refused(store_url(), str(folder / name), "symbolic link")
    assert kept.read_bytes() == b"someone's file" and os.stat(kept).st_mtime_ns == before.st_mtime_ns
    assert mode(kept) == stat.S_IMODE(before.st_mode)


def test_a_store_file_that_is_not_a_file_is_refused(state):
    (state / "class.db").mkdir(parents=True)
    os.chmod(state, 0o700)
    refused(store_url(), str(state / "class.db"), "not a regular file")


@as_root
def test_a_store_file_of_another_user_is_refused(state):
    state.mkdir(parents=True, mode=0o700)
    (state / "class.db").write_bytes(b"")
    os.chown(state / "class.db", OTHER, OTHER)
    refused(store_url(), str(state / "class.db"), f"uid {OTHER}")


def test_an_earlier_versions_0644_file_of_ours_is_closed(tmp_path, monkeypatch):
    """A store an earlier version made under LLMVIZ_CLASS_STORE (SQLite's 0644): ours, so closed to 0600, and kept."""
    url = f"sqlite:///{tmp_path / 'class.db'}"
    code, _ = classes.start(open_store(url))
    os.chmod(tmp_path / "class.db", 0o644)
    assert open_store(url).get(code) is not None and mode(tmp_path / "class.db") == 0o600


def test_the_old_temporary_store_is_noted_once_and_never_opened(state, tmp_path, caplog):
    old = tmp_path / "tmp" / "llmviz-class"
    old.mkdir(parents=True)
    (old / "class.db").write_bytes(b"an earlier version's classes")
    os.chmod(old / "class.db", 0o644)
    before = os.stat(old / "class.db")
    caplog.set_level(logging.WARNING)
    urls = {store_url() for _ in range(3)}
    classes.start(open_store(store_url()))
    notes = [r.getMessage() for r in caplog.records if str(old) in r.getMessage()]
    assert len(notes) == 1 and str(old / "class.db") in notes[0]
    assert "no longer used" in notes[0] and "deleted" in notes[0]
    assert urls == {f"sqlite:///{state / 'class.db'}"}
    assert os.listdir(old) == ["class.db"] and (old / "class.db").read_bytes() == b"an earlier version's classes"
    after = os.stat(old / "class.db")
    assert (after.st_mtime_ns, stat.S_IMODE(after.st_mode)) == (before.st_mtime_ns, 0o644)  # not even closed


def test_no_note_without_the_old_store(state, caplog):
    caplog.set_level(logging.WARNING)
    store_url()
    assert not [r for r in caplog.records if r.name == private_dir.__name__]


def test_a_named_store_in_a_good_folder_works(tmp_path, monkeypatch):
    """A folder of ours that others may read but not write (a 0755 /srv/llmviz): the store works, its file 0600."""
    folder = tmp_path / "srv"
    folder.mkdir()
    os.chmod(folder, 0o755)
    monkeypatch.setenv(STORE_ENV, f"sqlite:///{folder / 'class.db'}")
    code, _ = classes.start(open_store(store_url()))
    assert open_store(store_url()).get(code) is not None
    assert mode(folder) == 0o755 and mode(folder / "class.db") == 0o600


def test_a_named_folder_is_made_private(tmp_path, monkeypatch):
    monkeypatch.setenv(STORE_ENV, f"sqlite:///{tmp_path / 'a' / 'b' / 'class.db'}")
    open_store(store_url())
    assert mode(tmp_path / "a" / "b") == 0o700 and mode(tmp_path / "a" / "b" / "class.db") == 0o600


@pytest.mark.parametrize("wide", [0o775, 0o777, 0o1777], ids=oct)
def test_a_named_folder_others_can_write_is_refused(tmp_path, wide):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, wide)
    message = refused(f"sqlite:///{folder / 'class.db'}", str(folder), f"{wide:04o}", STORE_ENV)
    assert ("chmod 700" in message) == (wide != 0o1777)  # /tmp's kind is not a folder to close
    assert os.listdir(folder) == []


@as_root
def test_a_named_folder_of_another_user_is_refused(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, OTHER, OTHER)
    refused(f"sqlite:///{folder / 'class.db'}", str(folder), f"uid {OTHER}")


def test_a_named_folder_is_checked_and_opened_where_its_link_leads(tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir(mode=0o700)
    link.symlink_to(real)
    assert open_store(f"sqlite:///{link / 'class.db'}").path == str(real / "class.db")
    os.chmod(real, 0o777)
    refused(f"sqlite:///{link / 'class.db'}", str(real), "0777")


def test_the_cli_says_the_refusal_in_one_line(state, capsys):
    state.mkdir(parents=True)
    os.chmod(state, 0o777)
    assert main(["class", "start", "--url", "http://10.0.0.5:8501/"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(state) in err and "chmod 700" in err


def test_a_folder_that_cannot_be_made_is_one_clear_error(state, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "file" / "state"))
    with pytest.raises(ConfigError) as err:
        open_store(store_url())
    assert str(tmp_path / "file" / "state" / "llmviz") in str(err.value) and STORE_ENV in str(err.value)
