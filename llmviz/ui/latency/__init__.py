"""The latency family (the Prefill and Roofline pages, claim K1, C7, C18): the prefill sweep and its curves
(latency_sweep.py, latency_curves.py), the roofline (roofline_view.py), decode's slowdown with context
(slowdown_view.py)."""
