"""Every rank's process-wide settings, for every device, TF32 and thread option (no process started)."""

import itertools

import pytest
import torch

from commprof.worker.torch_settings import TorchSettings, apply_settings, rank_settings


@pytest.mark.parametrize(
    "device,tf32,omp,local", list(itertools.product(["cpu", "cuda"], [None, True, False], [None, "3"], ["1", "2", "4"]))
)
def test_every_combination(device, tf32, omp, local):
    environ = {"LOCAL_WORLD_SIZE": local} | ({"OMP_NUM_THREADS": omp} if omp else {})
    got = rank_settings(device, tf32, environ, cores=8)
    # the thread cap never depends on TF32 (it once was the `else` of the TF32 switch)
    want_threads = (int(omp) if omp else 8 // int(local)) if device == "cpu" else None
    assert got == TorchSettings(threads=want_threads, tf32=tf32)


def test_more_ranks_than_cores_get_one_thread_each():
    assert rank_settings("cpu", None, {"LOCAL_WORLD_SIZE": "4"}, cores=2).threads == 1


@pytest.mark.parametrize("tf32", [True, False])
def test_applied_settings_reach_torch(tf32):
    threads, matmul, cudnn = (
        torch.get_num_threads(),
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
    )
    try:
        apply_settings(TorchSettings(threads=1, tf32=tf32))
        assert (torch.get_num_threads(), torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (
            1,
            tf32,
            tf32,
        )
    finally:
        torch.set_num_threads(threads)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
