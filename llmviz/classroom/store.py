"""Where a class's shared state lives: one small interface, two stores behind it. A class spans several
app processes (scripts/serve-class runs replicas behind HAProxy), so nothing of it is kept in a process: SQLite
(Python's sqlite3, WAL) on one machine by default, Redis (redis-py against a real redis-server) when the class runs
on several machines (`LLMVIZ_CLASS_STORE=redis://host:port/db`).

A store keeps records and answers questions about them; it decides nothing. What may be done, by whom and within
which limits is llmviz/classroom/classes.py, the one place of those rules, over either store.

Records, per class (its join code is its id): the class (the teacher key's hash, its limits, the step the projector
shows, when it was last active, which of the teacher's devices leads), its students (a generated id and a changeable
name, nothing else), their predictions (a value per student, item and round), answers, prompts and results; plus
counters for rate limits (a key, a window).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass

from llmviz.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """What one class may hold (checked on construction): students, a student's submissions, a prompt's length,
    and the idle time after which the class ends by itself and its data is deleted."""

    students: int = 60
    submissions: int = 40  # per student: predictions (each item and round counts once) and prompts
    prompt_chars: int = 200
    idle_s: float = 3 * 3600.0
    lifetime_s: float = 24 * 3600.0  # a class ends this long after it started, however active (a lesson, not a term)

    def __post_init__(self):
        for name, low, high in (("students", 1, 500), ("submissions", 1, 1000), ("prompt_chars", 1, 4000)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"a class's {name} must be a whole number in {low}..{high}, got {value!r}")
        for name, low, high, says in (("idle_s", 60, 86400, "idle time must be 60 s to a day"),
                                      ("lifetime_s", 3600, 7 * 86400, "lifetime must be an hour to a week")):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, int | float) and math.isfinite(value)
                                               and low <= value <= high):
                raise ConfigError(f"a class's {says}, got {value!r}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ClassRecord:
    code: str
    teacher_hash: str  # sha256 of the teacher key: the key itself is never stored
    limits: Limits
    step: str  # the lesson position the projector shows ("1.2.3", "end")
    created: float
    active: float  # last activity (seconds since the epoch)
    round: int = 1  # the vote the students' predictions go to at this step: 1, or 2 after the discussion
    leader: str = ""  # the teacher's device that leads (the projector): a token of its browser session, or none yet
    led: float = 0.0  # when the leading device last said it is there
    starter: str = ""  # the client that started it (its start limit's key, forgotten when the class ends)

    @property
    def expires(self) -> float:
        """When the class ends however active it is (a store's records of it may expire by themselves then)."""
        return self.created + self.limits.lifetime_s


@dataclass(frozen=True)
class Student:
    id: str
    name: str
    joined: float
    device: str = ""  # the browser it joined from (its cookie's token; "" unknown): one seat a device, never shown


JOINED, FULL, REMOVED, GONE = "joined", "full", "removed", "gone"  # what add_student did


class Store(ABC):
    """The records of every class; each method is one atomic change or one read."""

    @abstractmethod
    def create(self, record: ClassRecord) -> bool:
        """Keep a new class; False when its code is taken (nothing changed)."""

    @abstractmethod
    def get(self, code: str) -> ClassRecord | None: ...

    @abstractmethod
    def set_step(self, code: str, step: str, now: float, leader: str | None = None) -> bool:
        """The projector's step (a new step's vote is the first), only while `leader` leads the class (None: whoever
        leads); whether it was set."""

    @abstractmethod
    def lead(self, code: str, device: str, now: float, stale_s: float, take: bool) -> bool:
        """`device` leads the class (and says so now) if it already did, if none did, if the leading device has not
        said so for `stale_s`, or if it `take`s the lead; whether it leads (atomic: two devices never both lead)."""

    @abstractmethod
    def set_round(self, code: str, round_: int, now: float) -> None: ...

    @abstractmethod
    def touch(self, code: str, now: float) -> None:
        """Note activity (the idle clock starts again)."""

    @abstractmethod
    def add_student(self, code: str, student: Student, most: int) -> tuple[str, Student | None]:
        """Seat a student: (JOINED, the student kept) — the one its device already has in the class, if it has one,
        else `student` — or (FULL, None) when the class holds `most`, (REMOVED, None) for a device the teacher
        removed, (GONE, None) for a class that is gone. Atomic: two joining at once never pass the limit together,
        one device never takes two seats, and nothing is written for a class that just ended (every write below
        checks the class the same way)."""

    @abstractmethod
    def remove_student(self, code: str, student_id: str) -> bool:
        """The teacher removes a student: their seat, predictions, answers, prompt and result go, and their device
        may not join this class again; whether they were in it."""

    @abstractmethod
    def rename(self, code: str, student_id: str, name: str) -> bool: ...

    @abstractmethod
    def students(self, code: str) -> list[Student]:
        """In the order they joined."""

    @abstractmethod
    def put_prediction(self, code: str, student_id: str, item: str, round_: int, value: float, most: int) -> bool:
        """Set a student's prediction (a later one replaces it) unless that would be the student's `most`+1-th
        submission; whether it was kept."""

    @abstractmethod
    def predictions(self, code: str, item: str, round_: int) -> dict[str, float]:
        """{student id: value} for one item and round."""

    @abstractmethod
    def put_answer(self, code: str, student_id: str, chapter: str, given: float, right: bool, answer: float,
                   most: int) -> bool:
        """Keep a student's answer to a chapter's question (`answer`: the right one of the student's own draw; a
        later one replaces it), unless it would be the student's `most`+1-th submission; whether it was kept."""

    @abstractmethod
    def answers(self, code: str, chapter: str) -> dict[str, tuple[float, bool, float | None]]:
        """{student id: (answer given, whether it was right, the right answer or None if not kept)} for one chapter's
        question."""

    @abstractmethod
    def put_prompt(self, code: str, student_id: str, text: str, now: float, most: int) -> bool:
        """Keep a student's prompt for the class's workload (a later one replaces it and must be approved again),
        unless it would be the student's `most`+1-th submission; whether it was kept."""

    @abstractmethod
    def prompts(self, code: str) -> list[tuple[str, str, float, bool]]:
        """(student id, text, when submitted, approved) of every prompt, in the order submitted."""

    @abstractmethod
    def approve(self, code: str, student_id: str, text: str) -> bool:
        """Approve a student's prompt if it is still `text` (the one the teacher saw); whether it was."""

    @abstractmethod
    def put_result(self, code: str, student_id: str, result: dict) -> None:
        """What the class's run drew for a student's request (its text, TTFT and inter-token latency)."""

    @abstractmethod
    def result(self, code: str, student_id: str) -> dict | None: ...

    @abstractmethod
    def all_predictions(self, code: str) -> list[tuple[str, str, int, float]]:
        """(student id, item, round, value) of every prediction of the class (the teacher's summary)."""

    @abstractmethod
    def submissions(self, code: str, student_id: str) -> int: ...

    @abstractmethod
    def delete(self, code: str) -> None:
        """Every record of the class, gone."""

    @abstractmethod
    def prune(self, now: float) -> None:
        """Remove what no live class holds: another class's leftovers, rate-limit windows past."""

    @abstractmethod
    def codes(self) -> list[str]:
        """The codes of every class kept."""

    @abstractmethod
    def unhit(self, key: str, window_s: float, at: float) -> None:
        """Take back one event of `key` from the window of `window_s` that holds `at` (a class ended: its start, in
        the window it was started in, if that window is still kept; a seat that was not taken), the window's row gone
        at zero: no address kept once nothing of it counts."""

    @abstractmethod
    def hit(self, key: str, window_s: float, now: float) -> int:
        """Count one event under `key` in the current window of `window_s` seconds; the count in it, this one
        included (a rate limit's counter: a join attempt per client)."""
