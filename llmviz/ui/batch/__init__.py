"""The Batch family (C13; claim K5): the padded batch's run and sweep (batch_run.py) and its URL section
(batch_url.py)."""
