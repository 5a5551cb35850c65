"""The Claims family: measuring the article's claims K1-K11 on the shared model cache and showing their verdicts
(claims_run.py), and one measurement of a claim at a time for a whole public server (claim_flight.py). The pages
that show a claim (Compare, the latency pages, KV layouts, the lesson) read it from here."""
