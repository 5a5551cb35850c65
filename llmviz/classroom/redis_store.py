"""The class store across machines (issue 39): Redis through redis-py. Every key of a class starts `class:<code>`
(its hash, its students in the order they joined, their names, a hash of values per item and round, and the set of
items each student has submitted), so that ending a class deletes them all. The two changes that check a limit run
as Lua scripts: Redis runs a script whole, so two students joining at once never pass the limit together.
"""

from __future__ import annotations

import json

from llmviz.classroom.store import ClassRecord, Limits, Store, Student

CODES = "classes"  # the set of every class's code
# KEYS: the students' list, their names' hash; ARGV: the most, the id, the name record
ADD_STUDENT = """
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
"""
# KEYS: the student's submitted items (a set), the item and round's values (a hash); ARGV: item|round, the most,
# the student, the value (a prediction; or an answer: Q<chapter>|0 and its record, in the chapter's answers' hash)
PUT_PREDICTION = """
local new = redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0
if new and redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
return 1
"""


def _key(code: str, *parts: str) -> str:
    return ":".join(("class", code, *parts))


class RedisStore(Store):
    def __init__(self, url: str):
        import redis

        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5.0)
        self.r.ping()  # a store that cannot be reached says so now, not at a student's first join
        self._add = self.r.register_script(ADD_STUDENT)
        self._put = self.r.register_script(PUT_PREDICTION)

    def create(self, record: ClassRecord) -> bool:
        key = _key(record.code)
        if not self.r.hsetnx(key, "teacher_hash", record.teacher_hash):  # the first to take the code owns it
            return False
        self.r.hset(key, mapping={"limits": json.dumps(record.limits.to_dict()), "step": record.step,
                                  "created": record.created, "active": record.active, "round": record.round})
        self.r.sadd(CODES, record.code)
        return True

    def get(self, code: str) -> ClassRecord | None:
        h = self.r.hgetall(_key(code))
        if not h or "limits" not in h:
            return None
        return ClassRecord(code, h["teacher_hash"], Limits(**json.loads(h["limits"])), h["step"], float(h["created"]),
                           float(h["active"]), int(h.get("round", 1)))

    def set_step(self, code: str, step: str, now: float) -> None:
        if self.r.exists(_key(code)):
            self.r.hset(_key(code), mapping={"step": step, "active": now, "round": 1})

    def set_round(self, code: str, round_: int, now: float) -> None:
        if self.r.exists(_key(code)):
            self.r.hset(_key(code), mapping={"round": round_, "active": now})

    def touch(self, code: str, now: float) -> None:
        if self.r.exists(_key(code)):
            self.r.hset(_key(code), "active", now)

    def add_student(self, code: str, student: Student, most: int) -> bool:
        record = json.dumps({"name": student.name, "joined": student.joined})
        return bool(self._add(keys=[_key(code, "students"), _key(code, "names")], args=[most, student.id, record]))

    def rename(self, code: str, student_id: str, name: str) -> bool:
        held = self.r.hget(_key(code, "names"), student_id)
        if held is None:
            return False
        self.r.hset(_key(code, "names"), student_id, json.dumps({**json.loads(held), "name": name}))
        return True

    def students(self, code: str) -> list[Student]:
        ids = self.r.lrange(_key(code, "students"), 0, -1)
        names = self.r.hgetall(_key(code, "names"))
        return [Student(i, (rec := json.loads(names[i]))["name"], rec["joined"]) for i in ids if i in names]

    def put_prediction(self, code: str, student_id: str, item: str, round_: int, value: float, most: int) -> bool:
        keys = [_key(code, "done", student_id), _key(code, "pred", item, str(round_))]
        return bool(self._put(keys=keys, args=[f"{item}|{round_}", most, student_id, repr(float(value))]))

    def put_answer(self, code: str, student_id: str, chapter: str, given: float, right: bool, most: int) -> bool:
        keys = [_key(code, "done", student_id), _key(code, "answers", chapter)]
        record = json.dumps([float(given), bool(right)])
        return bool(self._put(keys=keys, args=[f"Q{chapter}|0", most, student_id, record]))

    def answers(self, code: str, chapter: str) -> dict[str, tuple[float, bool]]:
        return {s: (float((v := json.loads(x))[0]), bool(v[1]))
                for s, x in self.r.hgetall(_key(code, "answers", chapter)).items()}

    def put_prompt(self, code: str, student_id: str, text: str, now: float, most: int) -> bool:
        record = json.dumps({"text": text, "submitted": now, "approved": False})
        keys = [_key(code, "done", student_id), _key(code, "prompts")]
        return bool(self._put(keys=keys, args=["prompt|0", most, student_id, record]))

    def prompts(self, code: str) -> list[tuple[str, str, float, bool]]:
        rows = [(s, json.loads(x)) for s, x in self.r.hgetall(_key(code, "prompts")).items()]
        return [(s, p["text"], p["submitted"], p["approved"]) for s, p in sorted(rows, key=lambda x: (
            x[1]["submitted"], x[0]))]

    def approve(self, code: str, student_id: str) -> None:
        held = self.r.hget(_key(code, "prompts"), student_id)
        if held is not None:
            self.r.hset(_key(code, "prompts"), student_id, json.dumps({**json.loads(held), "approved": True}))

    def put_result(self, code: str, student_id: str, result: dict) -> None:
        self.r.hset(_key(code, "results"), student_id, json.dumps(result))

    def result(self, code: str, student_id: str) -> dict | None:
        held = self.r.hget(_key(code, "results"), student_id)
        return None if held is None else json.loads(held)

    def predictions(self, code: str, item: str, round_: int) -> dict[str, float]:
        return {s: float(v) for s, v in self.r.hgetall(_key(code, "pred", item, str(round_))).items()}

    def all_predictions(self, code: str) -> list[tuple[str, str, int, float]]:
        out = []
        for key in self.r.scan_iter(match=_key(code, "pred", "*"), count=500):
            item, round_ = key.split(":")[-2:]  # an item never holds ":" (a claim id)
            out += [(s, item, int(round_), float(v)) for s, v in self.r.hgetall(key).items()]
        return sorted(out, key=lambda x: (x[1], x[2], x[0]))

    def submissions(self, code: str, student_id: str) -> int:
        return int(self.r.scard(_key(code, "done", student_id)))

    def delete(self, code: str) -> None:
        keys = [_key(code), *self.r.scan_iter(match=_key(code, "*"), count=500)]
        self.r.delete(*keys)
        self.r.srem(CODES, code)

    def codes(self) -> list[str]:
        records = [(c, self.r.hget(_key(c), "created")) for c in self.r.smembers(CODES)]
        return [c for c, created in sorted(records, key=lambda x: float(x[1] or 0))]

    def hit(self, key: str, window_s: float, now: float) -> int:
        name = f"hits:{key}:{int(now // window_s)}"
        with self.r.pipeline() as p:
            p.incr(name)
            p.expire(name, max(1, int(2 * window_s)))
            count, _ = p.execute()
        return int(count)
