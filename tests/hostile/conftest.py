import pytest


@pytest.fixture(scope="session")
def tiny():
    from llmviz.engine.loading.model import load_model

    return load_model("llmviz-tiny")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread, as the CLI tests run: on a shared 2-core machine two threads mostly wait on each other."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
