"""The article's claims, one module each (llmviz/analysis/claim_spec.py reads every module's CLAIM)."""
