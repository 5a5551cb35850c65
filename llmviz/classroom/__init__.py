"""A class in one room (issue 39): the projector, the students' devices, one engine. `classes` holds the rules
(start, join, move, predict, end), `store` the interface of the shared state, with SQLite and Redis behind it.
No torch, no streamlit."""
