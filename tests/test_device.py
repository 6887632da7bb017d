"""Device, precision and process set-up (lab/device.py)."""

import pytest
import torch

from lab.device import Dist, autocast, autocast_dtype, init_distributed, pick_device


def test_devices_and_precisions():
    cpu = torch.device("cpu")
    assert pick_device("cpu") == cpu and pick_device("auto").type in ("cpu", "cuda", "mps")
    assert autocast_dtype("fp32", cpu) is None and autocast_dtype("bf16", cpu) == torch.bfloat16
    with pytest.raises(ValueError, match="precision must be one of"):
        autocast_dtype("fp8", cpu)
    with autocast(cpu, None):
        assert not torch.is_autocast_enabled("cpu")
    with autocast(cpu, torch.bfloat16):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="unknown device"):
        pick_device("gpu0")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_fails_in_one_clear_line():
    with pytest.raises(ValueError) as info:
        pick_device("cuda")
    assert "no CUDA GPU" in str(info.value) and "\n" not in str(info.value)


def test_one_process_is_rank_0_of_1(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert init_distributed(torch.device("cpu")) == Dist(0, 1, 0) and Dist().main
