"""A class in one room: the rules, in one place, over either store (llmviz/classroom/store.py).

- The teacher starts a class and gets a join code (shown on the projector) and a teacher key (in the teacher's URL
  only; the store keeps its hash). Only the key moves the class, and ends it; of the teacher's devices, the one that
  leads (the projector) moves it: a second one follows it and may take the lead, so two never fight.
- A student joins with the code: anonymous, a generated name they may change (unique in the class); nothing
  personal is kept. One seat a device (its browser's token): a device joins once, however many sessions it opens,
  and one the teacher removed cannot join that class again (a new token can: a cookie is the client's to drop, so
  what bounds a client that drops it is its SEATS_PER_MINUTE).
- Codes cannot be guessed within the tries' limit: 31^6 (about 8.9e8) codes, JOIN_ATTEMPTS tries a minute per
  client (llmviz/classroom/clients.py: one address, an IPv6 /64; a whole class behind one school NAT address must
  fit in it), and every code checked counts, a join's and a teacher link's alike, whose refusals read the same ("no
  such class, or not yours"). A client guessing for a whole class hour at the limit finds one of 10 live classes
  with a chance of about 10 x 7,200 / 8.9e8, under one in 10,000 (a fixed window: up to twice the limit around its
  edge).
- One client takes at most SEATS_PER_MINUTE new seats a minute, well under a class's 60: one phone cannot fill a
  class or stuff its vote before the teacher sees it (and removes the seats); a class of 60 behind one NAT address
  joins in three minutes.
- Limits per class: students, a student's submissions, a prompt's length; a class idle past its idle time, or past
  its lifetime however active, ends by itself (`sweep`), and ending deletes every record of it.
Each refusal is a ClassError with a code (a page says it in its language); no torch, no streamlit here.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections.abc import Collection

from llmviz.classroom.store import REMOVED, ClassRecord, Limits, Store, Student
from llmviz.errors import LlmvizError

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: read off a projector without doubt
CODE_LENGTH = 6
JOIN_ATTEMPTS, JOIN_WINDOW_S = 120, 60.0  # codes checked per client a minute (joins, teacher links)
SEATS_PER_MINUTE = 20  # new seats one client takes a minute
STARTS, STARTS_WINDOW_S = 5, 3600.0  # classes a client address may start an hour
NAME_CHARS = 24
ROUNDS = (1, 2)  # a prediction before discussion, and one after
LEAD_STALE_S = 30.0  # a leading device silent this long (closed) gives the lead to a device opening the class
RELOAD_S = 3.0  # a leading tab silent this long (three projector polls) gives the lead to its own browser's tabs
NEVER_STALE_S = 1e18  # a leader of another browser, to a device already open: it never gives way by itself
ANIMALS = ("Otter", "Heron", "Lynx", "Panda", "Crane", "Gecko", "Ibis", "Koala", "Marten", "Orca", "Puffin",
           "Quail", "Raven", "Seal", "Tapir", "Wren", "Yak", "Zebra", "Badger", "Camel")


class ClassError(LlmvizError):
    """A class refused something. code: no_class (a wrong or ended code, or a teacher key that is not the class's:
    one answer, so that a teacher link tells no more than a join), full, not_leader (another of the teacher's
    devices leads), too_many (the tries' limit, a minute), too_many_seats (new seats from one client, a minute),
    too_many_starts (classes started by one client, an hour), removed (a device the teacher removed), name_taken,
    limit (a student's submissions), bad_value, no_student."""


NOT_YOURS = "no such class, or not yours: check the code on the projector"


def _hash(teacher_key: str) -> str:
    return hashlib.sha256(teacher_key.encode("utf-8")).hexdigest()


def normal_code(text: str) -> str:
    """A code as typed (lower case, spaces, a dash) in the form the store keeps."""
    return "".join(c for c in str(text).upper() if c.isalnum())


def is_code(text: str) -> bool:
    """Whether `text` has a join code's form (a link's value is checked before any store is asked)."""
    return len(text) == CODE_LENGTH and all(c in CODE_ALPHABET for c in text)


def start(store: Store, limits: Limits | None = None, now: float | None = None, step: str = "1.1.1",
          client: str | None = None, device: str = "", steps: Collection[str] | None = None) -> tuple[str, str]:
    """A new class: (join code, teacher key), led by `device` (the projector that started it; "" for none yet: the
    command line's, whose first teacher device leads). A client address may start STARTS an hour (`client` None:
    the command line, on the server itself); the classes past their time end first."""
    if steps is not None and step not in steps:  # the lesson's positions, handed down (analysis/lesson_plan)
        raise ClassError(f"no lesson step {step!r}", code="bad_value")
    now = time.time() if now is None else now
    if client is not None and store.hit(f"start:{client}", STARTS_WINDOW_S, now) > STARTS:
        store.unhit(f"start:{client}", STARTS_WINDOW_S, now)  # a start refused is no start: classes held count
        raise ClassError(f"this address started {STARTS} classes this hour: end one, or wait up to an hour",
                         code="too_many_starts")
    sweep(store, now)
    key = "-"
    while key.startswith("-"):  # a key never reads as an option wherever it is typed
        key = secrets.token_urlsafe(24)
    for _ in range(20):  # a taken code (one in 1e8 per live class) draws again
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        if store.create(ClassRecord(code, _hash(key), limits or Limits(), step, now, now, leader=device, led=now,
                                    starter=client or "")):
            return code, key
    raise ClassError("no free class code after 20 draws: the store holds too many classes", code="full")


def over(record: ClassRecord, now: float) -> bool:
    """Whether a class is past its time: idle past its idle time, or past its lifetime however active."""
    return now - record.active > record.limits.idle_s or now > record.expires


def live(store: Store, code: str, now: float | None = None) -> ClassRecord:
    """The class of `code`, or ClassError(no_class) for a wrong code or a class past its time (which ends here, its
    data deleted)."""
    now = time.time() if now is None else now
    record = store.get(normal_code(code))
    if record is None:
        raise ClassError(f"no class has the code {code!r}: check it on the projector", code="no_class")
    if over(record, now):
        store.delete(record.code)
        raise ClassError(f"the class {record.code} has ended", code="no_class")
    return record


def _try(store: Store, client: str, now: float) -> None:
    """Count a code checked by `client`; ClassError(too_many) past JOIN_ATTEMPTS this minute."""
    if store.hit(f"join:{client}", JOIN_WINDOW_S, now) > JOIN_ATTEMPTS:
        raise ClassError(f"too many tries: wait a minute (at most {JOIN_ATTEMPTS} a minute)", code="too_many")


def _new_name(taken: set[str]) -> str:
    """An animal and a number that no one in the class has (names compared as unique_name does)."""
    held = {unique_name(n) for n in taken}
    return next((n for n in (f"{secrets.choice(ANIMALS)} {secrets.randbelow(90) + 10}" for _ in range(50))
                 if unique_name(n) not in held), f"{secrets.choice(ANIMALS)} {secrets.token_hex(3)}")


def unique_name(name: str) -> str:
    """The form in which two names are the same name (case and spacing aside): one such name a class."""
    return " ".join(str(name).split()).casefold()


def join(store: Store, code: str, client: str, now: float | None = None, device: str = "") -> Student:
    """A student joins (`client`: what the limits count, llmviz/classroom/clients.py) from `device` (its browser's
    token; "" unknown: a seat each time), with a generated name no one else in the class has; a device already in the
    class gets its own seat back. Once a minute a join also ends the classes idle past their time."""
    now = time.time() if now is None else now
    _try(store, client, now)
    if store.hit("sweep", JOIN_WINDOW_S, now) == 1:
        sweep(store, now)
    record = live(store, code, now)
    students = store.students(record.code)
    held = next((s for s in students if device and s.device == device), None)
    if held is not None:  # this browser's seat (another tab, a reload without its link): no new seat
        return held
    if store.hit(f"seat:{client}", JOIN_WINDOW_S, now) > SEATS_PER_MINUTE:  # seats taken count; tries, above
        store.unhit(f"seat:{client}", JOIN_WINDOW_S, now)
        raise ClassError(f"{SEATS_PER_MINUTE} students joined from this network this minute: wait a minute",
                         code="too_many_seats")
    said, student = store.add_student(record.code, Student(secrets.token_hex(8), _new_name(
        {s.name for s in students}), now, str(device)), record.limits.students)
    if student is None:  # no seat taken: the network's allowance is not spent on it
        store.unhit(f"seat:{client}", JOIN_WINDOW_S, now)
    if said == REMOVED:
        raise ClassError("the teacher removed this device from the class", code="removed")
    if student is None:
        _refused(store, record, "full", f"the class is full ({record.limits.students} students)")
    store.touch(record.code, now)
    return student


def _refused(store: Store, record: ClassRecord, code: str, message: str):
    """A store's write refused: the class ended meanwhile (no_class), or the limit (`code`)."""
    if store.get(record.code) is None:
        raise ClassError(f"the class {record.code} has ended", code="no_class")
    raise ClassError(message, code=code)


def _student(store: Store, record: ClassRecord, student_id: str) -> Student:
    found = next((s for s in store.students(record.code) if s.id == student_id), None)
    if found is None:
        raise ClassError("this device is not in the class: join again with the code", code="no_student")
    return found


def rename(store: Store, code: str, student_id: str, name: str, now: float | None = None) -> str:
    """A student's new name (printable, at most NAME_CHARS characters, not empty, no other student's)."""
    record = live(store, code, now)
    clean = " ".join(str(name).split())
    if not clean or len(clean) > NAME_CHARS or not clean.isprintable():
        raise ClassError(f"a name is 1 to {NAME_CHARS} printable characters", code="bad_value")
    _student(store, record, student_id)
    if any(unique_name(s.name) == unique_name(clean) for s in store.students(record.code) if s.id != student_id):
        raise ClassError(f"another student in the class is called {clean!r}", code="name_taken")
    store.rename(record.code, student_id, clean)
    return clean


def draw_name(store: Store, code: str, student_id: str, now: float | None = None) -> str:
    """Another generated name for a student (a public server's only way to change one: nothing typed reaches its
    projector)."""
    record = live(store, code, now)
    _student(store, record, student_id)
    name = _new_name({s.name for s in store.students(record.code)})
    store.rename(record.code, student_id, name)
    return name


def remove(store: Store, code: str, teacher_key: str, student_id: str, now: float | None = None) -> bool:
    """The teacher removes a student: their seat and everything they sent go, and their device cannot join this
    class again; whether they were in it."""
    record = teacher(store, code, teacher_key, now)
    return store.remove_student(record.code, str(student_id))


def teacher(store: Store, code: str, teacher_key: str, now: float | None = None, client: str | None = None
            ) -> ClassRecord:
    """The live class of `code` for its teacher's key, or ClassError(no_class) whether the code or the key is wrong
    (one answer: a teacher link is no oracle of codes). A failure counts as one of `client`'s tries, as a join does
    (None: a check after one that passed, or the command line on the server itself)."""
    now = time.time() if now is None else now
    record = store.get(normal_code(code))
    if record is None or not hmac.compare_digest(_hash(str(teacher_key)), record.teacher_hash):
        if client is not None:
            _try(store, client, now)
        raise ClassError(NOT_YOURS, code="no_class")
    return live(store, record.code, now)


def lead(store: Store, code: str, teacher_key: str, device: str, now: float | None = None, take: bool = False,
         opened: bool = False) -> bool:
    """Whether the teacher's `device` ("browser.tab": its browser's token and its tab's) leads the class, saying so
    (the leading projector asks every poll). It leads if it did, if none did, or on the teacher's click (`take`; the
    device that led then follows). Without a click it takes the lead only from a leader gone silent: a tab of its own
    browser silent RELOAD_S (the projector reloaded), or, on the run that opens the class on this device (`opened`),
    any device silent LEAD_STALE_S (the projector closed). A device already open never takes the lead from another
    browser by itself, however long the projector is busy (a long Reveal runs no poll)."""
    record = teacher(store, code, teacher_key, now)
    browser, dot, tab = str(device).partition(".")
    if not (browser and dot and tab):
        raise ClassError(f"a teacher's device is browser.tab, got {device!r}", code="bad_value")
    same_browser = record.leader.partition(".")[0] == browser
    stale_s = RELOAD_S if same_browser else LEAD_STALE_S if opened else NEVER_STALE_S  # silent this long: it gives way
    return store.lead(record.code, device, time.time() if now is None else now, stale_s, take)  # atomic, in the store


def move(store: Store, code: str, teacher_key: str, device: str, step: str, now: float | None = None) -> None:
    """The projector's step (the lesson's position), which the students' devices follow; only the leading device
    moves it (ClassError not_leader for another of the teacher's devices)."""
    record = teacher(store, code, teacher_key, now)
    if not device or not store.set_step(record.code, str(step), time.time() if now is None else now, leader=device):
        _refused(store, record, "not_leader", "another of the teacher's devices leads the class")


def second_round(store: Store, code: str, teacher_key: str, now: float | None = None) -> None:
    """Peer instruction's second vote at this step, after the class saw its first and argued: the students'
    predictions now go to round 2 (round 1 kept beside it)."""
    record = teacher(store, code, teacher_key, now)
    store.set_round(record.code, 2, time.time() if now is None else now)


def predict(store: Store, code: str, student_id: str, item: str, round_: int, value: float,
            now: float | None = None) -> None:
    """A student's prediction for `item` (a claim) in round 1 (before discussion) or 2 (after); a later one in the
    same round replaces it."""
    now = time.time() if now is None else now
    record = live(store, code, now)
    _student(store, record, student_id)
    if ":" in str(item) or not str(item) or len(str(item)) > 32:
        raise ClassError(f"an item is a short name without ':', got {item!r}", code="bad_value")
    if round_ not in ROUNDS or not isinstance(value, int | float) or not math.isfinite(value):
        raise ClassError(f"a prediction is a finite number in round 1 or 2, got {value!r} in round {round_!r}",
                         code="bad_value")
    if not store.put_prediction(record.code, student_id, str(item), round_, float(value), record.limits.submissions):
        _refused(store, record, "limit", f"no more submissions ({record.limits.submissions} a student)")
    store.touch(record.code, now)


def answer(store: Store, code: str, student_id: str, chapter: str, given: float, right: bool, answer_: float,
           now: float | None = None) -> None:
    """A student's answer to a chapter's question, graded by the page from the student's own run and draw (`answer_`:
    the right one for them; neighbours' differ); a later one replaces it."""
    now = time.time() if now is None else now
    record = live(store, code, now)
    _student(store, record, student_id)
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (given, answer_)) or not str(chapter) or \
            len(str(chapter)) > 8:
        raise ClassError(f"an answer is a finite number to a chapter, got {given!r} ({answer_!r}) to {chapter!r}",
                         code="bad_value")
    most = record.limits.submissions
    if not store.put_answer(record.code, student_id, str(chapter), float(given), bool(right), float(answer_), most):
        _refused(store, record, "limit", f"no more submissions ({most} a student)")
    store.touch(record.code, now)


def submit_prompt(store: Store, code: str, student_id: str, text: str, now: float | None = None) -> str:
    """A student's prompt for the class's workload (§3.2): printable, 1 to the class's prompt_chars characters; the
    projector shows it only once the teacher approved it (its length before)."""
    now = time.time() if now is None else now
    record = live(store, code, now)
    _student(store, record, student_id)
    clean = " ".join(str(text).split())
    if not clean or len(clean) > record.limits.prompt_chars or not clean.isprintable():
        raise ClassError(f"a prompt is 1 to {record.limits.prompt_chars} printable characters", code="bad_value")
    if not store.put_prompt(record.code, student_id, clean, now, record.limits.submissions):
        _refused(store, record, "limit", f"no more submissions ({record.limits.submissions} a student)")
    store.touch(record.code, now)
    return clean


def approve(store: Store, code: str, teacher_key: str, seen: list[tuple[str, str]], now: float | None = None) -> int:
    """The teacher lets the prompts they read (`seen`: (student, text) pairs) reach the projector and the run; a
    prompt changed since it was read stays unapproved. How many were approved."""
    record = teacher(store, code, teacher_key, now)
    return sum(store.approve(record.code, sid, text) for sid, text in seen)


def workload(store: Store, code: str, teacher_key: str, now: float | None = None) -> list[dict]:
    """The class's requests in the order submitted: {student, name, text, approved} (the teacher's view)."""
    record = teacher(store, code, teacher_key, now)
    names = {s.id: s.name for s in store.students(record.code)}
    return [{"student": sid, "name": names.get(sid, "?"), "text": text, "approved": ok}
            for sid, text, _, ok in store.prompts(record.code)]


def put_results(store: Store, code: str, teacher_key: str, results: dict[str, dict], now: float | None = None) -> None:
    """What the class's run drew for each student's request, for their phones to read."""
    record = teacher(store, code, teacher_key, now)
    for sid, result in results.items():
        store.put_result(record.code, sid, result)


REVEAL = "reveal:"  # + an item: the teacher's measurement, kept beside the students' results (never a student's id)


def put_reveal(store: Store, code: str, teacher_key: str, item: str, measured: dict, now: float | None = None) -> None:
    """The teacher's Reveal of `item` (the judged claim and when it was measured), for the students' devices to show
    the very measurement the projector shows, never one of their own."""
    record = teacher(store, code, teacher_key, now)
    store.put_result(record.code, f"{REVEAL}{item}", measured)


def reveal_of(store: Store, code: str, item: str) -> dict | None:
    """The teacher's Reveal of `item` in this class, or None before it."""
    return store.result(normal_code(code), f"{REVEAL}{item}")


def summary(store: Store, code: str, teacher_key: str, now: float | None = None, chapters: tuple = ()) -> dict:
    """What the teacher may download before ending the class: its students by their generated (or chosen) names,
    every prediction and every answer to the `chapters`' questions by name. Nothing else is kept of anyone."""
    record = teacher(store, code, teacher_key, now)
    students = store.students(record.code)
    names = {s.id: s.name for s in students}
    return {"class": record.code, "started": record.created, "step": record.step,
            "students": [{"name": s.name, "joined": s.joined} for s in students],
            "predictions": [{"name": names.get(sid, "?"), "item": item, "round": round_, "value": value}
                            for sid, item, round_, value in store.all_predictions(record.code)],
            "answers": [{"name": names.get(sid, "?"), "chapter": chapter, "given": given, "right": right,
                         "answer": answer_} for chapter in chapters
                        for sid, (given, right, answer_) in store.answers(record.code, chapter).items()]}


def end(store: Store, code: str, teacher_key: str, now: float | None = None) -> None:
    """The teacher ends the class: every record of it is deleted, and its start no longer counts against its starter
    (a client holds at most STARTS classes an hour, ended ones aside; no address kept once none counts)."""
    record = teacher(store, code, teacher_key, now)
    store.delete(record.code)
    if record.starter:
        store.unhit(f"start:{record.starter}", STARTS_WINDOW_S, record.created)  # where its start was counted


def sweep(store: Store, now: float | None = None) -> list[str]:
    """End every class past its time (its data deleted), then remove anything no live class holds; the codes
    ended."""
    now = time.time() if now is None else now
    ended = []
    for code in store.codes():
        record = store.get(code)
        if record is not None and over(record, now):
            store.delete(code)
            ended.append(code)
    store.prune(now)
    return ended
