"""A class in one room: the projector, the students' devices, one engine. `classes` holds the rules
(start, join, move, predict, end), `store` the interface of the shared state, with SQLite and Redis behind it.
No torch, no streamlit."""
