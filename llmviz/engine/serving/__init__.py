"""Serving schedulers on the real engine: request traces, continuous batching over the paged cache, static
batching for comparison (C13, C15, C22)."""
