"""The lesson family: its steps and URL section (lesson_steps.py), each chapter's live panels (lesson_prefill.py,
lesson_decode.py, lesson_memory.py), the Reveal of a claim (lesson_reveal.py) and the end (lesson_end.py)."""
