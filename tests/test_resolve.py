import pytest

from commprof.config import ProfileSchedule, RunRequest
from commprof.errors import UsageError
from commprof.launch.resolve import MachineProbe, resolve
from commprof.settings import DDPOptions

CPU_ONLY = MachineProbe(
    cuda_available=False,
    gpu_count=0,
    nccl_available=False,
    mpi_available=False,
    mpi4py_problem="mpi4py is not installed; install MPI with: pip install 'commprof[mpi]'",
)
WITH_MPI4PY = MachineProbe(
    cuda_available=False, gpu_count=0, nccl_available=False, mpi_available=False, mpi4py_problem=None
)
FOUR_GPUS = MachineProbe(cuda_available=True, gpu_count=4, nccl_available=True, mpi_available=False)


def request(tmp_path, **kw):
    return RunRequest(traces_dir=tmp_path / "traces", reports_dir=tmp_path / "reports", **kw)


def test_cpu_defaults(tmp_path):
    config = resolve(request(tmp_path), CPU_ONLY)
    assert (config.device, config.backend, config.procs_per_node, config.world_size) == ("cpu", "gloo", 2, 2)


def test_cuda_defaults_every_gpu_and_nccl(tmp_path):
    config = resolve(request(tmp_path), FOUR_GPUS)
    assert (config.device, config.backend, config.procs_per_node) == ("cuda", "nccl", 4)


def test_mpi_through_mpi4py_resolves_on_cpu(tmp_path):
    config = resolve(request(tmp_path, backend="mpi"), WITH_MPI4PY)
    assert (config.backend, config.device) == ("mpi", "cpu")


def test_two_run_ids_differ(tmp_path):
    assert resolve(request(tmp_path), CPU_ONLY).run_id != resolve(request(tmp_path), CPU_ONLY).run_id


@pytest.mark.parametrize(
    "kwargs, probe, message",
    [
        (dict(gpus=8), CPU_ONLY, "--gpus 8: CUDA is not available"),
        (dict(gpus=8), FOUR_GPUS, "--gpus 8: only 4 GPU(s) visible"),
        (dict(gpus=2, device="cpu"), FOUR_GPUS, "contradict"),
        (dict(backend="nccl"), CPU_ONLY, "--backend nccl: NCCL has no CPU transport; on CPU use --backend gloo or mpi"),
        (dict(backend="mpi"), CPU_ONLY, "no MPI backend and mpi4py is not installed; install MPI with"),
        (dict(backend="mpi", nodes=2, run_id="x", rdzv_endpoint="h:1"), WITH_MPI4PY, "one node"),
        (dict(backend="tcp"), CPU_ONLY, "--backend must be one of"),
        (dict(device="tpu"), CPU_ONLY, "--device must be one of"),
        (dict(device="cuda"), CPU_ONLY, "--device cuda: CUDA is not available"),
        (dict(procs=0), CPU_ONLY, "--procs must be >= 1"),
        (dict(procs=2), FOUR_GPUS, "--procs is for CPU ranks"),
        (dict(steps=10), CPU_ONLY, "smaller than the profiler schedule"),
        (dict(nodes=2), CPU_ONLY, "--run-id"),
        (dict(nodes=2, run_id="x"), CPU_ONLY, "--rdzv-endpoint"),
        (dict(run_id="x", nodes=2, rdzv_endpoint="nohost"), CPU_ONLY, "HOST:PORT"),
        (dict(run_id="../escape"), CPU_ONLY, "--run-id"),
        (dict(model_size="huge"), CPU_ONLY, "--model-size"),
        (dict(batch_size=0), CPU_ONLY, "--batch-size"),
    ],
)
def test_bad_requests(tmp_path, kwargs, probe, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(request(tmp_path, **kwargs), probe)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DDPOptions(bucket_cap_mb=0), "--bucket-cap-mb must be > 0"),
        (lambda: DDPOptions(bucket_cap_mb=-5), "--bucket-cap-mb must be > 0"),
        (lambda: DDPOptions(comm_hook="int8"), "--comm-hook"),
        (lambda: DDPOptions(grad_accum=0), "--grad-accum"),
        (lambda: ProfileSchedule(active=0), "--active"),
        (lambda: ProfileSchedule.parse("1,2"), "WAIT,WARMUP,ACTIVE"),
    ],
)
def test_bad_options(make, message):
    with pytest.raises(UsageError, match=message):
        make()


def test_existing_run_id_is_never_overwritten(tmp_path):
    (tmp_path / "traces" / "taken").mkdir(parents=True)
    with pytest.raises(UsageError, match="already exists"):
        resolve(request(tmp_path, run_id="taken"), CPU_ONLY)


def test_reports_dir_that_is_a_file(tmp_path):
    (tmp_path / "reports").write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        resolve(request(tmp_path), CPU_ONLY)


def test_capability_matrix_on_one_gpu():
    """One GPU: NCCL cannot put two ranks on it (said, not tried); Gloo's two ranks share it."""
    from commprof.commands.backends import _why_not

    one_gpu = MachineProbe(
        cuda_available=True, gpu_count=1, nccl_available=True, mpi_available=False, mpi4py_problem=None
    )
    assert _why_not("nccl", "cuda", one_gpu) == "NCCL needs a GPU for each of the 2 ranks; 1 visible"
    assert _why_not("gloo", "cuda", one_gpu) is None and _why_not("nccl", "cuda", FOUR_GPUS) is None


def test_a_timeout_named_on_the_command_line_is_known_as_given(tmp_path):
    """launch/deadline.py bounds a script's own longer process-group timeouts only by a --timeout the user gave."""
    assert not resolve(request(tmp_path), CPU_ONLY).timeout_given
    assert resolve(request(tmp_path, named=("timeout_s",)), CPU_ONLY).timeout_given
