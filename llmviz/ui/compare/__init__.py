"""The Compare family: the A/B comparison's run and prediction (compare_run.py), its URL section (compare_url.py),
its result (compare_view.py) and the long-context decode section (long_decode.py)."""
