"""The one progress shape (trace/progress.py): a part of a run reports into its slice of the whole."""

from llmviz.trace.progress import silent, within


def test_a_part_reports_into_its_slice_clamped_and_renamed():
    seen = []
    whole = lambda f, stage, values: seen.append((round(f, 6), stage, values))  # noqa: E731
    part = within(whole, 0.25, 0.5, "K3")
    part(0.0, "round", {"round": 1})
    part(0.5, "round", {"round": 2})
    part(1.7, "done", {})  # a report past the end stays at the slice's end
    part(-1.0, "x", {})
    assert seen == [(0.25, "K3", {"round": 1}), (0.375, "K3", {"round": 2}), (0.5, "K3", {}), (0.25, "K3", {})]
    within(whole, 0.0, 1.0)(0.5, "length", {"tokens": 8})  # no new stage: the part's own
    assert seen[-1] == (0.5, "length", {"tokens": 8})
    assert silent(0.5, "round", {}) is None
