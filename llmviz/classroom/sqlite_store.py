"""The class store on one machine: SQLite through Python's sqlite3, in WAL mode so that the app's
processes read while one writes. A connection per call (a Streamlit session is a thread, and replicas are
processes): each change is one transaction, `BEGIN IMMEDIATE` where it reads before it writes (a limit, the class's
existence), so that two processes never both pass a limit and nothing is written for a class that just ended.
Deleted rows are overwritten (secure_delete), not left in the file's free pages.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from llmviz.classroom.store import FULL, GONE, JOINED, REMOVED, ClassRecord, Limits, Store, Student

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (code TEXT PRIMARY KEY, teacher_hash TEXT NOT NULL, limits TEXT NOT NULL,
                                    step TEXT NOT NULL, created REAL NOT NULL, active REAL NOT NULL,
                                    round INTEGER NOT NULL DEFAULT 1, leader TEXT NOT NULL DEFAULT '',
                                    led REAL NOT NULL DEFAULT 0, starter TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS students (code TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, joined REAL NOT NULL,
                                     seq INTEGER PRIMARY KEY AUTOINCREMENT, device TEXT NOT NULL DEFAULT '',
                                     UNIQUE (code, id));
CREATE TABLE IF NOT EXISTS removed (code TEXT NOT NULL, device TEXT NOT NULL, PRIMARY KEY (code, device));
CREATE TABLE IF NOT EXISTS predictions (code TEXT NOT NULL, student TEXT NOT NULL, item TEXT NOT NULL,
                                        round INTEGER NOT NULL, value REAL NOT NULL,
                                        PRIMARY KEY (code, student, item, round));
CREATE TABLE IF NOT EXISTS answers (code TEXT NOT NULL, student TEXT NOT NULL, chapter TEXT NOT NULL,
                                    given REAL NOT NULL, right INTEGER NOT NULL, answer REAL,
                                    PRIMARY KEY (code, student, chapter));
CREATE TABLE IF NOT EXISTS prompts (code TEXT NOT NULL, student TEXT NOT NULL, text TEXT NOT NULL,
                                    submitted REAL NOT NULL, approved INTEGER NOT NULL DEFAULT 0,
                                    PRIMARY KEY (code, student));
CREATE TABLE IF NOT EXISTS results (code TEXT NOT NULL, student TEXT NOT NULL, result TEXT NOT NULL,
                                    PRIMARY KEY (code, student));
CREATE TABLE IF NOT EXISTS hits (key TEXT NOT NULL, until REAL NOT NULL, count INTEGER NOT NULL,
                                 PRIMARY KEY (key, until));
"""


CLASS_TABLES = ("predictions", "answers", "prompts", "results", "students", "removed")  # a class's rows beside its own
# columns a file made by an earlier version lacks (the default store outlives an upgrade): (table, column, its type)
ADDED = (("classes", "round", "INTEGER NOT NULL DEFAULT 1"), ("classes", "leader", "TEXT NOT NULL DEFAULT ''"),
         ("classes", "led", "REAL NOT NULL DEFAULT 0"), ("answers", "answer", "REAL"),
         ("classes", "starter", "TEXT NOT NULL DEFAULT ''"), ("students", "device", "TEXT NOT NULL DEFAULT ''"))
COUNTERS = ("hits", {"key", "until", "count"})  # rate-limit windows: an earlier version's form is dropped, not kept
CLASS_COLUMNS = "code, teacher_hash, limits, step, created, active, round, leader, led, starter"


class SqliteStore(Store):
    def __init__(self, path: str | Path):
        self.path = str(path)
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")  # outside a transaction; the file keeps it
            table, columns = COUNTERS
            held = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}  # a name above
            if held and held != columns:  # a minute's counters are all it holds
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.executescript(SCHEMA)
            for table, column, kind in ADDED:
                if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:  # names above
                    try:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    except sqlite3.OperationalError as exc:  # another replica added it in between
                        if "duplicate column" not in str(exc):
                            raise
        finally:
            db.close()

    @contextlib.contextmanager
    def _db(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        try:
            db.execute("PRAGMA secure_delete=ON")
            db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            yield db
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    @staticmethod
    def _exists(db: sqlite3.Connection, code: str) -> bool:
        return db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone() is not None

    @classmethod
    def _seated(cls, db: sqlite3.Connection, code: str, student_id: str) -> bool:
        """The class is there and the student in it (a removed student's late write lands nowhere)."""
        return cls._exists(db, code) and db.execute("SELECT 1 FROM students WHERE code = ? AND id = ?",
                                                    (code, student_id)).fetchone() is not None

    def create(self, record: ClassRecord) -> bool:
        with self._db(immediate=True) as db:
            try:
                db.execute(f"INSERT INTO classes ({CLASS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (record.code, record.teacher_hash, json.dumps(record.limits.to_dict()), record.step,
                            record.created, record.active, record.round, record.leader, record.led, record.starter))
            except sqlite3.IntegrityError:
                return False
        return True

    def get(self, code: str) -> ClassRecord | None:
        with self._db() as db:
            row = db.execute(f"SELECT {CLASS_COLUMNS} FROM classes WHERE code = ?", (code,)).fetchone()
        if row is None:
            return None
        return ClassRecord(row[0], row[1], Limits(**json.loads(row[2])), *row[3:])

    def set_step(self, code: str, step: str, now: float, leader: str | None = None) -> bool:
        with self._db() as db:
            return db.execute("UPDATE classes SET step = ?, active = ?, round = 1 WHERE code = ? AND "
                              "(?4 IS NULL OR leader = ?4)", (step, now, code, leader)).rowcount == 1

    def lead(self, code: str, device: str, now: float, stale_s: float, take: bool) -> bool:
        with self._db(immediate=True) as db:
            return db.execute("UPDATE classes SET leader = ?2, led = ?3 WHERE code = ?1 AND (?5 OR leader = ?2 OR "
                              "leader = '' OR ?3 - led > ?4)", (code, device, now, stale_s, take)).rowcount == 1

    def set_round(self, code: str, round_: int, now: float) -> None:
        with self._db() as db:
            db.execute("UPDATE classes SET round = ?, active = ? WHERE code = ?", (round_, now, code))

    def touch(self, code: str, now: float) -> None:
        with self._db() as db:
            db.execute("UPDATE classes SET active = ? WHERE code = ?", (now, code))

    def add_student(self, code: str, student: Student, most: int) -> tuple[str, Student | None]:
        with self._db(immediate=True) as db:
            if not self._exists(db, code):
                return GONE, None
            if student.device:
                if db.execute("SELECT 1 FROM removed WHERE code = ? AND device = ?",
                              (code, student.device)).fetchone():
                    return REMOVED, None
                row = db.execute("SELECT id, name, joined, device FROM students WHERE code = ? AND device = ?",
                                 (code, student.device)).fetchone()
                if row is not None:
                    return JOINED, Student(*row)
            (held,) = db.execute("SELECT COUNT(*) FROM students WHERE code = ?", (code,)).fetchone()
            if held >= most:
                return FULL, None
            db.execute("INSERT INTO students (code, id, name, joined, device) VALUES (?, ?, ?, ?, ?)",
                       (code, student.id, student.name, student.joined, student.device))
        return JOINED, student

    def remove_student(self, code: str, student_id: str) -> bool:
        with self._db(immediate=True) as db:
            row = db.execute("SELECT device FROM students WHERE code = ? AND id = ?", (code, student_id)).fetchone()
            if row is None:
                return False
            if row[0]:
                db.execute("INSERT OR IGNORE INTO removed VALUES (?, ?)", (code, row[0]))
            for table in ("predictions", "answers", "prompts", "results"):
                db.execute(f"DELETE FROM {table} WHERE code = ? AND student = ?", (code, student_id))  # names above
            db.execute("DELETE FROM students WHERE code = ? AND id = ?", (code, student_id))
        return True

    def rename(self, code: str, student_id: str, name: str) -> bool:
        with self._db() as db:
            return db.execute("UPDATE students SET name = ? WHERE code = ? AND id = ?",
                              (name, code, student_id)).rowcount == 1

    def students(self, code: str) -> list[Student]:
        with self._db() as db:
            rows = db.execute("SELECT id, name, joined, device FROM students WHERE code = ? ORDER BY seq",
                              (code,)).fetchall()
        return [Student(*row) for row in rows]

    def put_prediction(self, code: str, student_id: str, item: str, round_: int, value: float, most: int) -> bool:
        with self._db(immediate=True) as db:
            held = db.execute("SELECT 1 FROM predictions WHERE code = ? AND student = ? AND item = ? AND round = ?",
                              (code, student_id, item, round_)).fetchone()
            if held is None and self._count(db, code, student_id) >= most:  # a new item or round counts; a
                return False  # change of mind does not
            if not self._seated(db, code, student_id):
                return False
            db.execute("INSERT OR REPLACE INTO predictions VALUES (?, ?, ?, ?, ?)",
                       (code, student_id, item, round_, value))
        return True

    def put_answer(self, code: str, student_id: str, chapter: str, given: float, right: bool, answer: float,
                   most: int) -> bool:
        with self._db(immediate=True) as db:
            held = db.execute("SELECT 1 FROM answers WHERE code = ? AND student = ? AND chapter = ?",
                              (code, student_id, chapter)).fetchone()
            if (held is None and self._count(db, code, student_id) >= most) or not self._seated(db, code, student_id):
                return False
            db.execute("INSERT OR REPLACE INTO answers (code, student, chapter, given, right, answer) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (code, student_id, chapter, given, int(right), answer))
        return True

    def answers(self, code: str, chapter: str) -> dict[str, tuple[float, bool, float | None]]:
        with self._db() as db:
            rows = db.execute("SELECT student, given, right, answer FROM answers WHERE code = ? AND chapter = ?",
                              (code, chapter)).fetchall()
        return {s: (g, bool(r), a) for s, g, r, a in rows}  # a: None in a row an earlier version kept

    @staticmethod
    def _count(db: sqlite3.Connection, code: str, student_id: str) -> int:
        """A student's submissions: predictions (an item and round each), answers (a chapter each), a prompt."""
        (count,) = db.execute("SELECT (SELECT COUNT(*) FROM predictions WHERE code = ?1 AND student = ?2) + "
                              "(SELECT COUNT(*) FROM answers WHERE code = ?1 AND student = ?2) + "
                              "(SELECT COUNT(*) FROM prompts WHERE code = ?1 AND student = ?2)",
                              (code, student_id)).fetchone()
        return count

    def put_prompt(self, code: str, student_id: str, text: str, now: float, most: int) -> bool:
        with self._db(immediate=True) as db:
            held = db.execute("SELECT 1 FROM prompts WHERE code = ? AND student = ?", (code, student_id)).fetchone()
            if (held is None and self._count(db, code, student_id) >= most) or not self._seated(db, code, student_id):
                return False
            db.execute("INSERT OR REPLACE INTO prompts VALUES (?, ?, ?, ?, 0)", (code, student_id, text, now))
        return True

    def prompts(self, code: str) -> list[tuple[str, str, float, bool]]:
        with self._db() as db:
            rows = db.execute("SELECT student, text, submitted, approved FROM prompts WHERE code = ? "
                              "ORDER BY submitted, student", (code,)).fetchall()
        return [(s, text, when, bool(ok)) for s, text, when, ok in rows]

    def approve(self, code: str, student_id: str, text: str) -> bool:
        with self._db() as db:
            return db.execute("UPDATE prompts SET approved = 1 WHERE code = ? AND student = ? AND text = ?",
                              (code, student_id, text)).rowcount == 1

    def put_result(self, code: str, student_id: str, result: dict) -> None:
        with self._db(immediate=True) as db:
            if self._exists(db, code):
                db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?)", (code, student_id, json.dumps(result)))

    def result(self, code: str, student_id: str) -> dict | None:
        with self._db() as db:
            row = db.execute("SELECT result FROM results WHERE code = ? AND student = ?",
                             (code, student_id)).fetchone()
        return None if row is None else json.loads(row[0])

    def predictions(self, code: str, item: str, round_: int) -> dict[str, float]:
        with self._db() as db:
            rows = db.execute("SELECT student, value FROM predictions WHERE code = ? AND item = ? AND round = ?",
                              (code, item, round_)).fetchall()
        return dict(rows)

    def all_predictions(self, code: str) -> list[tuple[str, str, int, float]]:
        with self._db() as db:
            return db.execute("SELECT student, item, round, value FROM predictions WHERE code = ? "
                              "ORDER BY item, round, student", (code,)).fetchall()

    def submissions(self, code: str, student_id: str) -> int:
        with self._db() as db:
            return self._count(db, code, student_id)

    def delete(self, code: str) -> None:
        with self._db(immediate=True) as db:
            for table in (*CLASS_TABLES, "classes"):
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))  # one of the names above

    def prune(self, now: float) -> None:
        with self._db(immediate=True) as db:
            for table in CLASS_TABLES:  # rows of a class that is gone (nothing should leave any: a net under it)
                db.execute(f"DELETE FROM {table} WHERE code NOT IN (SELECT code FROM classes)")  # a name above
            db.execute("DELETE FROM hits WHERE until < ?", (now,))

    def codes(self) -> list[str]:
        with self._db() as db:
            return [code for (code,) in db.execute("SELECT code FROM classes ORDER BY created").fetchall()]

    def unhit(self, key: str, window_s: float, at: float) -> None:
        until = (at // window_s + 1) * window_s  # the window that holds `at`, as hit names it
        with self._db(immediate=True) as db:
            db.execute("UPDATE hits SET count = count - 1 WHERE key = ? AND until = ?", (key, until))
            db.execute("DELETE FROM hits WHERE key = ? AND count <= 0", (key,))

    def hit(self, key: str, window_s: float, now: float) -> int:
        until = (now // window_s + 1) * window_s  # the end of the current window
        with self._db(immediate=True) as db:
            db.execute("DELETE FROM hits WHERE until <= ?", (now,))  # every key's past windows: no address kept
            db.execute("INSERT INTO hits VALUES (?, ?, 1) ON CONFLICT (key, until) DO UPDATE SET count = count + 1",
                       (key, until))
            (count,) = db.execute("SELECT count FROM hits WHERE key = ? AND until = ?", (key, until)).fetchone()
        return count
