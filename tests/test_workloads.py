import textwrap

import pytest
import torch

from commprof.errors import WorkloadError
from commprof.workloads import check_workload, load_workload
from commprof.workloads.workload import call_model


@pytest.mark.parametrize("name", ["mlp", "transformer", "convnet", "mlstm"])
def test_builtin_models_train_one_step(name):
    workload = load_workload(name, "small")
    check_workload(workload, batch_size=2, seed=0)
    inputs, target = workload.make_batch(2, torch.Generator().manual_seed(0))
    workload.loss(call_model(workload.model, inputs), target).backward()
    assert workload.parameter_count > 100_000
    assert all(p.grad is not None for p in workload.model.parameters())


def test_model_sizes_grow():
    counts = [load_workload("transformer", s).parameter_count for s in ("small", "medium")]
    assert counts[0] < counts[1]


def write(tmp_path, body):
    path = tmp_path / "user_model.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_user_file_with_batch_maker_and_loss(tmp_path):
    path = write(
        tmp_path,
        """
        import torch
        def build():
            model = torch.nn.Linear(7, 3)
            return model, lambda n, g: (torch.randn(n, 7, generator=g), torch.zeros(n, 3)), torch.nn.functional.mse_loss
    """,
    )
    workload = load_workload(f"{path}:build", "small")
    check_workload(workload, 4, 0)
    assert workload.parameter_count == 7 * 3 + 3


def test_user_module_spec_with_inferred_batch(tmp_path, monkeypatch):
    write(tmp_path, "import torch\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(5, 2))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    workload = load_workload("user_model:build", "small")
    check_workload(workload, 4, 0)


@pytest.mark.parametrize(
    "spec, body, message",
    [
        ("nope.py:build", None, "file nope.py not found"),
        ("no_such_pkg.models:build", None, "module 'no_such_pkg' not found"),
        ("{path}:missing", "def build(): pass\n", "has no attribute 'missing'"),
        ("{path}:build", "def build():\n    raise ValueError('bad width')\n", "raised ValueError: bad width"),
        ("{path}:build", "def build():\n    return 42\n", "expected an nn.Module"),
        (
            "{path}:build",
            "import torch\ndef build():\n    return torch.nn.Linear(4, 2), lambda n, g: (torch.randn(n, 9), None)\n",
            "forward on a batch failed",
        ),
        ("{path}:build", "syntax error here\n", "SyntaxError"),
        ("resnet", None, "unknown model 'resnet'"),
    ],
)
def test_user_model_errors(tmp_path, spec, body, message):
    if body is not None:
        spec = spec.format(path=write(tmp_path, body))
    with pytest.raises(WorkloadError, match=message):
        check_workload(load_workload(spec, "small"), 2, 0)


def test_a_model_that_runs_only_on_gpus_is_left_to_the_gpu_ranks(tmp_path):
    """The pre-launch check runs a batch on the CPU: a CUDA-only model is refused for a CPU run, and on a GPU run
    the ranks get to run it (with a note)."""
    from commprof.commands.common import check_model
    from commprof.config import RunConfig
    from commprof.errors import ModelRunError

    spec = tmp_path / "cuda_only.py"
    spec.write_text(
        "import torch\n"
        "class M(torch.nn.Linear):\n"
        "    def forward(self, x):\n"
        "        raise RuntimeError('this kernel exists only on CUDA')\n"
        "def build():\n    return M(4, 2)\n"
    )
    notes = []
    feedback = type("Notes", (), {"info": lambda self, message: notes.append(message)})()
    gpu = RunConfig(run_id="g", device="cuda", backend="nccl", model=f"{spec}:build", traces_dir=tmp_path)
    assert check_model(gpu, feedback).parameter_count == 10
    assert notes == [
        f"{spec}:build: forward on a batch failed: RuntimeError: this kernel exists only on CUDA on the "
        "CPU; the ranks run it on their GPUs"
    ]
    with pytest.raises(ModelRunError, match="only on CUDA"):
        check_model(RunConfig(run_id="c", model=f"{spec}:build", traces_dir=tmp_path))
