"""Streamlit helpers shared by the pages: cached model loading and per-session state (no torch)."""
