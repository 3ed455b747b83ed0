"""The profiler's start without torch._inductor (instrument/profiler.py): while torch's profiler prepares, the lazy
attribute `torch._inductor` reads as absent instead of importing the compiler stack, unless an import of it is
under way; every other lazy attribute resolves as before, and torch's own lookup is back afterwards."""

import sys
import types

import pytest
import torch

from commprof.instrument.profiler import Profile, _inductor_not_loaded


@pytest.fixture
def inductor_not_imported(monkeypatch):
    """torch as a job that never compiled sees it, whatever this process imported before (restored after)."""
    if "_inductor" in torch.__dict__:  # (monkeypatch.delattr would read it first: an import where there was none)
        monkeypatch.delattr(torch, "_inductor")
    monkeypatch.delitem(sys.modules, "torch._inductor", raising=False)


def test_inductor_reads_as_absent_and_torchs_lookup_comes_back(inductor_not_imported):
    lazy = torch.__dict__["__getattr__"]
    with _inductor_not_loaded():
        with pytest.raises(AttributeError):
            torch.__getattr__("_inductor")
    assert torch.__dict__["__getattr__"] is lazy


def test_an_import_of_inductor_under_way_still_reads_it(inductor_not_imported, monkeypatch):
    """Another thread importing torch._inductor while the profiler starts: its modules read `torch._inductor`
    as they load (config.py does), and get the module being imported."""
    loading = types.ModuleType("torch._inductor")
    monkeypatch.setitem(sys.modules, "torch._inductor", loading)
    with _inductor_not_loaded():
        assert torch.__getattr__("_inductor") is loading


def test_a_profile_records_and_leaves_torchs_lookup_as_it_was():
    lazy = torch.__dict__["__getattr__"]
    with Profile() as prof:
        torch.ones(4).add_(1)
    assert any(e.name == "aten::add_" for e in prof.events())
    assert torch.__dict__["__getattr__"] is lazy
