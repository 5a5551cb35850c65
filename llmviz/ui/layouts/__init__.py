"""The KV layouts family (C6, C8, C9, C12; claim K3): the live runs, one per layout (layouts_run.py), the URL
section (layouts_url.py), the length sweep (layouts_sweep.py) and the locality view (locality_view.py)."""
