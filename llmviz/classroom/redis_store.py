"""The class store across machines: Redis through redis-py. Every key of a class starts `class:<code>`
(its hash, its students in the order they joined, their names, a hash of values per item and round, and the set of
items each student has submitted), so that ending a class deletes them all. Every change runs as a Lua script, which
Redis runs whole: two students joining at once never pass a limit together, and a change checks that the class's
hash still exists, so that nothing is written for a class that just ended (ending deletes the hash first), and
gives every key it writes the class's own expiry (its lifetime's end, and a minute): should no process ever sweep
again, Redis deletes a class's records by itself.
"""

from __future__ import annotations

import json
import math

from llmviz.classroom.store import JOINED, ClassRecord, Limits, Store, Student

CODES = "classes"  # the set of every class's code
EXPIRE_AFTER_S = 60  # a class's keys expire this long after its lifetime's end (the rules end it at the end)
# the end of each script that wrote a class's keys: the keys after the class's hash take its expiry
EXPIRE = """
local at = redis.call('HGET', KEYS[1], 'expires')
if at then for i = 2, #KEYS do redis.call('EXPIREAT', KEYS[i], at) end end
return 1
"""
# KEYS: the class's hash, the set of codes; ARGV: the code, the expiry, then the hash's fields and values
CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('EXPIREAT', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""
# KEYS: the class's hash, the hash to set (the class's own, or another of its hashes); ARGV: fields and values
SET_IF_LIVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV))
""" + EXPIRE
# KEYS: the class's hash; ARGV: '1' to ask for a leader, the leader the class must then have, fields and values
SET_IF_LEADER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '1' and (redis.call('HGET', KEYS[1], 'leader') or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
return 1
"""
# KEYS: the class's hash; ARGV: the device, now, the stale time, '1' to take the lead
LEAD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = redis.call('HGET', KEYS[1], 'leader') or ''
local led = tonumber(redis.call('HGET', KEYS[1], 'led') or '0')
if ARGV[4] == '1' or held == ARGV[1] or held == '' or tonumber(ARGV[2]) - led > tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'leader', ARGV[1], 'led', ARGV[2])
  return 1
end
return 0
"""
# KEYS: the class's hash, the students' list, their names' hash, their devices' hash, the removed devices' set; ARGV:
# the most, the id, the name record, the device. Returns the seat's id (the device's own if it has one), or why not.
ADD_STUDENT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if ARGV[4] ~= '' then
  if redis.call('SISMEMBER', KEYS[5], ARGV[4]) == 1 then return {'removed'} end
  local held = redis.call('HGET', KEYS[4], ARGV[4])
  if held then return {'joined', held} end
end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[1]) then return {'full'} end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[4], ARGV[4], ARGV[2]) end
local at = redis.call('HGET', KEYS[1], 'expires')
if at then for i = 2, #KEYS do redis.call('EXPIREAT', KEYS[i], at) end end
return {'joined', ARGV[2]}
"""
# KEYS: the class's hash, the students' list, their names' hash, their devices' hash, the removed devices' set, the
# student's submitted items, the prompts' hash, the results' hash; ARGV: the id. Returns 1 if the student was there.
REMOVE_STUDENT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = redis.call('HGET', KEYS[3], ARGV[1])
if not held then return 0 end
local device = cjson.decode(held)['device'] or ''
if device ~= '' then
  redis.call('SADD', KEYS[5], device)
  redis.call('HDEL', KEYS[4], device)
end
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[6])
redis.call('HDEL', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
""" + EXPIRE
# KEYS: the class's hash, the student's submitted items (a set), the item and round's values (a hash), the students'
# names (the student must be in it: a removed student's late write lands nowhere); ARGV:
# item|round, the most, the student, the value (a prediction; or an answer: Q<chapter>|0 and its record, in the
# chapter's answers' hash; or a prompt)
PUT = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[4], ARGV[3]) == 0 then return 0 end
local new = redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0
if new and redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
""" + EXPIRE
# KEYS: the class's hash, a hash of JSON records; ARGV: the field, the record's key, its new value, and (optional)
# the key and value the record must still hold
EDIT_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = redis.call('HGET', KEYS[2], ARGV[1])
if not held then return 0 end
local r = cjson.decode(held)
if ARGV[4] and r[ARGV[4]] ~= ARGV[5] then return 0 end
r[ARGV[2]] = cjson.decode(ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(r))
return 1
"""


# KEYS: a rate limit's window; one event taken back, the window gone at zero (one already gone stays gone)
UNHIT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('DECR', KEYS[1]) <= 0 then redis.call('DEL', KEYS[1]) end
return 1
"""


def _key(code: str, *parts: str) -> str:
    return ":".join(("class", code, *parts))


class RedisStore(Store):
    def __init__(self, url: str):
        import redis

        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5.0)
        self.r.ping()  # a store that cannot be reached says so now, not at a student's first join
        self._create, self._set = self.r.register_script(CREATE), self.r.register_script(SET_IF_LIVE)
        self._add, self._put = self.r.register_script(ADD_STUDENT), self.r.register_script(PUT)
        self._edit = self.r.register_script(EDIT_RECORD)
        self._set_led, self._lead = self.r.register_script(SET_IF_LEADER), self.r.register_script(LEAD)
        self._remove, self._unhit = self.r.register_script(REMOVE_STUDENT), self.r.register_script(UNHIT)

    def create(self, record: ClassRecord) -> bool:
        expires = math.ceil(record.expires) + EXPIRE_AFTER_S
        fields = {"teacher_hash": record.teacher_hash, "limits": json.dumps(record.limits.to_dict()),
                  "step": record.step, "created": record.created, "active": record.active, "round": record.round,
                  "leader": record.leader, "led": record.led, "starter": record.starter, "expires": expires}
        return bool(self._create(keys=[_key(record.code), CODES],
                                 args=[record.code, expires, *(x for kv in fields.items() for x in kv)]))

    def get(self, code: str) -> ClassRecord | None:
        h = self.r.hgetall(_key(code))
        if not h or "limits" not in h:
            return None
        return ClassRecord(code, h["teacher_hash"], Limits(**json.loads(h["limits"])), h["step"], float(h["created"]),
                           float(h["active"]), int(h.get("round", 1)), h.get("leader", ""), float(h.get("led", 0)),
                           h.get("starter", ""))

    def set_step(self, code: str, step: str, now: float, leader: str | None = None) -> bool:
        asks = ["0", ""] if leader is None else ["1", leader]
        return bool(self._set_led(keys=[_key(code)], args=[*asks, "step", step, "active", now, "round", 1]))

    def lead(self, code: str, device: str, now: float, stale_s: float, take: bool) -> bool:
        return bool(self._lead(keys=[_key(code)], args=[device, repr(float(now)), repr(float(stale_s)),
                                                         "1" if take else "0"]))

    def set_round(self, code: str, round_: int, now: float) -> None:
        self._set(keys=[_key(code), _key(code)], args=["round", round_, "active", now])

    def touch(self, code: str, now: float) -> None:
        self._set(keys=[_key(code), _key(code)], args=["active", now])

    def add_student(self, code: str, student: Student, most: int) -> tuple[str, Student | None]:
        record = json.dumps({"name": student.name, "joined": student.joined, "device": student.device})
        said = self._add(keys=[_key(code), _key(code, "students"), _key(code, "names"), _key(code, "devices"),
                               _key(code, "removed")], args=[most, student.id, record, student.device])
        if said[0] != JOINED:
            return said[0], None
        if said[1] == student.id:
            return JOINED, student
        return JOINED, next(s for s in self.students(code) if s.id == said[1])  # the device's own seat

    def remove_student(self, code: str, student_id: str) -> bool:
        done = self._remove(keys=[_key(code), _key(code, "students"), _key(code, "names"), _key(code, "devices"),
                                  _key(code, "removed"), _key(code, "done", student_id), _key(code, "prompts"),
                                  _key(code, "results")], args=[student_id])
        if not done:
            return False
        for key in self.r.scan_iter(match=_key(code, "pred", "*"), count=500):  # votes and answers: hashes by
            self.r.hdel(key, student_id)  # item, a student's field in each (the student is already out of the names:
        for key in self.r.scan_iter(match=_key(code, "answers", "*"), count=500):  # PUT writes nothing of theirs now)
            self.r.hdel(key, student_id)
        return True

    def rename(self, code: str, student_id: str, name: str) -> bool:
        return bool(self._edit(keys=[_key(code), _key(code, "names")], args=[student_id, "name", json.dumps(name)]))

    def students(self, code: str) -> list[Student]:
        ids = self.r.lrange(_key(code, "students"), 0, -1)
        names = self.r.hgetall(_key(code, "names"))
        return [Student(i, (rec := json.loads(names[i]))["name"], rec["joined"], rec.get("device", ""))
                for i in ids if i in names]

    def put_prediction(self, code: str, student_id: str, item: str, round_: int, value: float, most: int) -> bool:
        keys = [_key(code), _key(code, "done", student_id), _key(code, "pred", item, str(round_))]
        return bool(self._put(keys=[*keys, _key(code, "names")],
                              args=[f"{item}|{round_}", most, student_id, repr(float(value))]))

    def put_answer(self, code: str, student_id: str, chapter: str, given: float, right: bool, answer: float,
                   most: int) -> bool:
        keys = [_key(code), _key(code, "done", student_id), _key(code, "answers", chapter)]
        record = json.dumps([float(given), bool(right), float(answer)])
        return bool(self._put(keys=[*keys, _key(code, "names")], args=[f"Q{chapter}|0", most, student_id, record]))

    def answers(self, code: str, chapter: str) -> dict[str, tuple[float, bool, float | None]]:
        return {s: (float(v[0]), bool(v[1]), float(v[2]) if len(v) > 2 else None)
                for s, x in self.r.hgetall(_key(code, "answers", chapter)).items() for v in (json.loads(x),)}

    def put_prompt(self, code: str, student_id: str, text: str, now: float, most: int) -> bool:
        record = json.dumps({"text": text, "submitted": now, "approved": False})
        keys = [_key(code), _key(code, "done", student_id), _key(code, "prompts")]
        return bool(self._put(keys=[*keys, _key(code, "names")], args=["prompt|0", most, student_id, record]))

    def prompts(self, code: str) -> list[tuple[str, str, float, bool]]:
        rows = [(s, json.loads(x)) for s, x in self.r.hgetall(_key(code, "prompts")).items()]
        return [(s, p["text"], p["submitted"], p["approved"]) for s, p in sorted(rows, key=lambda x: (
            x[1]["submitted"], x[0]))]

    def approve(self, code: str, student_id: str, text: str) -> bool:
        return bool(self._edit(keys=[_key(code), _key(code, "prompts")],
                               args=[student_id, "approved", "true", "text", text]))

    def put_result(self, code: str, student_id: str, result: dict) -> None:
        self._set(keys=[_key(code), _key(code, "results")], args=[student_id, json.dumps(result)])

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
        with self.r.pipeline() as p:  # the hash first: from here no change of the class is written (its checks)
            p.delete(_key(code))
            p.srem(CODES, code)
            p.execute()
        keys = list(self.r.scan_iter(match=_key(code, "*"), count=500))
        if keys:
            self.r.delete(*keys)

    def prune(self, now: float) -> None:
        expired = [c for c in self.r.smembers(CODES) if not self.r.exists(_key(c))]  # its hash expired by itself
        if expired:
            self.r.srem(CODES, *expired)
        seen = list(self.r.scan_iter(match="class:*", count=500))  # before the codes: a class created in between
        live = self.r.smembers(CODES)  # is in them (its code added with its hash), so its keys stay
        gone = [k for k in seen if k.split(":")[1] not in live]
        if gone:
            self.r.delete(*gone)

    def codes(self) -> list[str]:
        records = [(c, self.r.hget(_key(c), "created")) for c in self.r.smembers(CODES)]
        return [c for c, created in sorted(records, key=lambda x: float(x[1] or 0))]

    def unhit(self, key: str, window_s: float, at: float) -> None:
        self._unhit(keys=[f"hits:{key}:{int(at // window_s)}"])  # the window that holds `at`, as hit names it

    def hit(self, key: str, window_s: float, now: float) -> int:
        name = f"hits:{key}:{int(now // window_s)}"
        with self.r.pipeline() as p:
            p.incr(name)
            p.expire(name, max(1, int(2 * window_s)))
            count, _ = p.execute()
        return int(count)
