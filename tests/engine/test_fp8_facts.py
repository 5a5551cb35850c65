"""FP8 on this machine, read at run time (engine/platform/fp8.py; C21, the a100_fp8 slip): the capabilities NVIDIA's
whitepapers give FP8 tensor cores, the format's largest value from its spec, and what this device does."""

import pytest
import torch

from llmviz.engine.platform.fp8 import fp8_facts, has_fp8_tensor_cores


@pytest.mark.parametrize(("capability", "cores"), [((7, 0), False), ((8, 0), False), ((8, 6), False),
                                                   ((8, 9), True), ((9, 0), True), ((10, 0), True)])
def test_fp8_tensor_cores_by_capability(capability, cores):
    """V100 7.0, A100 8.0 and A10 8.6 have none; L4/RTX 4090 8.9 (Ada), H100 9.0 (Hopper) and later do."""
    assert has_fp8_tensor_cores(capability) is cores


def test_the_cpu_stores_and_multiplies_fp8_without_tensor_cores():
    facts = fp8_facts(torch.device("cpu"))
    assert facts["max"] == 448.0  # E4M3's largest normal: 1.75 x 2^8
    assert facts["stores"] is True and facts["tensor_cores"] is None and facts["capability"] is None
    assert facts["multiplies"] is True  # torch 2.13's CPU build runs _scaled_mm (in software): 16 ones summed to 16


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the lent one's capability)")
def test_a_cuda_device_reports_its_capability():
    facts = fp8_facts(torch.device("cuda"))
    cap = torch.cuda.get_device_capability()
    assert facts["capability"] == list(cap) and facts["tensor_cores"] is has_fp8_tensor_cores(cap)
