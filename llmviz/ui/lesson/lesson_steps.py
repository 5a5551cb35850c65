"""The lesson's URL section: the step a link opens, and a class in one room. The steps themselves, their
order and what a position is are llmviz/analysis/lesson_plan.py's (the `llmviz class` command reads the same list),
named here too for the lesson's own modules. No torch, no streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmviz.analysis.lesson_plan import (
    CHAPTER_ENDS,
    CHAPTERS,
    END,
    POSITIONS,
    STEP_IDS,
    STEPS,
    Step,
    check_built,
    opened,
    position_of,
)
from llmviz.classroom.classes import is_code, normal_code
from llmviz.ui.url_fields import Section, flag, one_of, url

__all__ = ["CHAPTERS", "CHAPTER_ENDS", "END", "POSITIONS", "SECTION", "STEPS", "STEP_IDS", "LessonSettings", "Step",
           "check_built", "opened", "position_of"]

# The lesson's URL section (ui/url_fields.py): the step shown, "1.2.3" or "end"; a chapter ("4.2") opens its first
# opened; from_lesson=1: the page shown was opened from that step, and offers the way back (ui/lesson_link.py)
# room, teach, me, review: a class in one room: its join code, the teacher's key (the teacher's URL only),
# this device's student id once joined; review=1 on the teacher's own second device (it reads and approves the
# class's prompts off the projector, and never moves the class)
@dataclass(frozen=True)
class LessonSettings:
    at: str = field(default=STEP_IDS[0], metadata=url("lesson", one_of(POSITIONS), parse=opened))
    from_lesson: bool = field(default=False, metadata=flag("from_lesson"))
    room: str = field(default="", metadata=url("room", lambda v: v == "" or is_code(v), parse=normal_code))
    teach: str = field(default="", metadata=url("teach", lambda v: len(v) <= 64 and all(c.isalnum() or c in "-_"
                                                                                          for c in v)))
    me: str = field(default="", metadata=url("me", lambda v: len(v) <= 32 and all(c in "0123456789abcdef"
                                                                                   for c in v)))
    review: bool = field(default=False, metadata=flag("review"))


SECTION = Section.of("lesson", LessonSettings)
