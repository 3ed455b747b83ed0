"""FSDP's options as commprof applies them (instrument.fsdp.shard) and names them (the lines it pastes for them:
test_render_model_words.py). Sharded in this process over a one-rank Gloo group on an in-memory store: nothing
launched, no network."""

import pytest
import torch
import torch.distributed as dist
from torch import nn

from commprof.instrument.fsdp import blocks, shard
from commprof.settings import FSDPOptions, setting_label


@pytest.fixture
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def five_blocks() -> nn.Module:
    return nn.Sequential(*(nn.Linear(4, 4) for _ in range(5)))


def prefetched(model: nn.Module) -> tuple[list[list[int]], list[list[int]]]:
    """Per block, the indices of the blocks it prefetches in forward and in backward."""
    sharded = list(blocks(model))
    index = {id(b._get_fsdp_state()): i for i, b in enumerate(sharded)}
    state = [b._get_fsdp_state() for b in sharded]
    return (
        [[index[id(s)] for s in st._states_to_forward_prefetch] for st in state],
        [[index[id(s)] for s in st._states_to_backward_prefetch] for st in state],
    )


def test_defaults_leave_fsdp2_its_own_prefetching(one_rank):
    model = shard(five_blocks())
    assert prefetched(model) == ([[]] * 5, [[]] * 5)
    policy = model[0]._get_fsdp_state()._mp_policy
    assert policy.reduce_dtype is None and policy.param_dtype is None
    assert model[2]._get_fsdp_state()._fsdp_param_group.post_forward_mesh_info is not None  # resharded


def test_prefetch_depths_reshard_and_reduce_dtype(one_rank):
    model = shard(
        five_blocks(),
        FSDPOptions(reshard_after_forward=False, forward_prefetch=2, backward_prefetch=2, reduce_dtype="bf16"),
    )
    forward, backward = prefetched(model)
    assert forward == [[1, 2], [2, 3], [3, 4], [4], []]
    assert backward == [[], [0], [1, 0], [2, 1], [3, 2]]  # backward runs the blocks in reverse
    state = model[2]._get_fsdp_state()
    assert state._mp_policy.reduce_dtype == torch.bfloat16
    assert state._fsdp_param_group.post_forward_mesh_info is None  # kept gathered after forward


def test_labels():
    assert setting_label(FSDPOptions()) == "reshard"
    options = FSDPOptions(reshard_after_forward=False, forward_prefetch=2, backward_prefetch=3, reduce_dtype="fp16")
    assert setting_label(options) == "no-reshard_fwd-prefetch-2_bwd-prefetch-3_reduce-fp16"
