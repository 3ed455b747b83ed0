"""Launch modes from the environment a launcher exports: SLURM job steps and MPI launchers."""

import os
import shlex
import socket
import subprocess
import sys

import pytest

from commprof.config import RunRequest
from commprof.errors import UsageError
from commprof.launch.resolve import MachineProbe
from commprof.launch.slurm import apply_slurm, expand_hostlist, sbatch_script, slurm_step
from commprof.worker.mpi_identity import identity_from_env, started_by_mpi_launcher
from commprof.worker.mpi_rank import rank_config
from commprof.worker.rank import gpu_index
from tests.conftest import FAST_RUN, commprof_here, load_json

# What `srun --nodes=2 --ntasks-per-node=1` exports to the task on the second node (Slurm 23.x).
SRUN_TASK_ON_NODE_1 = {
    "SLURM_JOB_ID": "812345",
    "SLURM_JOBID": "812345",
    "SLURM_JOB_NAME": "commprof",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_JOB_NODELIST": "gpu-[07-08]",
    "SLURM_NNODES": "2",
    "SLURM_NODELIST": "gpu-[07-08]",
    "SLURM_STEP_ID": "0",
    "SLURM_STEPID": "0",
    "SLURM_STEP_NUM_NODES": "2",
    "SLURM_STEP_NUM_TASKS": "2",
    "SLURM_STEP_NODELIST": "gpu-[07-08]",
    "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
    "SLURM_NODEID": "1",
    "SLURM_PROCID": "1",
    "SLURM_LOCALID": "0",
    "SLURM_NTASKS": "2",
    "SLURM_TASKS_PER_NODE": "1(x2)",
    "SLURMD_NODENAME": "gpu-08",
    "SLURM_GPUS_ON_NODE": "8",
    "SLURM_CPUS_ON_NODE": "64",
}
# The batch script itself (no srun): only the batch host runs commprof.
SBATCH_SHELL = {
    "SLURM_JOB_ID": "812346",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_JOB_NODELIST": "gpu-[07-08]",
    "SLURM_NNODES": "2",
    "SLURM_NODEID": "0",
    "SLURMD_NODENAME": "gpu-07",
}
# `mpirun -np 4` (Open MPI 4/5), rank 2 of 4 on the second node
OPEN_MPI_RANK_2 = {
    "OMPI_COMM_WORLD_RANK": "2",
    "OMPI_COMM_WORLD_SIZE": "4",
    "OMPI_COMM_WORLD_LOCAL_RANK": "0",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "OMPI_COMM_WORLD_NODE_RANK": "1",
    "OMPI_UNIVERSE_SIZE": "4",
    "PMIX_RANK": "2",
    "OMPI_MCA_orte_ess_num_procs": "4",
}
# `mpiexec -n 4` (MPICH 4 Hydra), rank 3 of 4
MPICH_RANK_3 = {
    "PMI_RANK": "3",
    "PMI_SIZE": "4",
    "PMI_FD": "9",
    "MPI_LOCALRANKID": "1",
    "MPI_LOCALNRANKS": "2",
    "PMI_SUBVERSION": "1",
    "PMI_VERSION": "1",
    "HYDI_CONTROL_FD": "7",
}


def test_hostlists():
    assert expand_hostlist("gpu-[07-08]") == ["gpu-07", "gpu-08"]
    assert expand_hostlist("gpu-[01-03,07],login1") == ["gpu-01", "gpu-02", "gpu-03", "gpu-07", "login1"]
    assert expand_hostlist("rack[1-2]n[01-02]") == ["rack1n01", "rack1n02", "rack2n01", "rack2n02"]
    assert expand_hostlist("node9") == ["node9"]


def test_srun_step_gives_nodes_rendezvous_and_run_id():
    step = slurm_step(SRUN_TASK_ON_NODE_1)
    assert (step.nodes, step.node_rank, step.first_host, step.run_id) == (2, 1, "gpu-07", "slurm-812345.0")
    assert apply_slurm(1, None, None, step) == (2, "gpu-07:31845", "slurm-812345.0")  # 29500 + 812345 % 10000
    assert apply_slurm(2, "head:1234", "mine", step) == (2, "head:1234", "mine")  # what the user gave wins


def test_batch_shell_runs_on_one_node():
    step = slurm_step(SBATCH_SHELL)
    assert apply_slurm(1, None, None, step) == (1, None, "slurm-812346")


@pytest.mark.parametrize(
    "env, nodes, message",
    [
        ({**SRUN_TASK_ON_NODE_1, "SLURM_STEP_NUM_TASKS": "16"}, 1, "use srun --ntasks-per-node=1"),
        (SRUN_TASK_ON_NODE_1, 4, "--nodes 4 contradicts the SLURM job step, which spans 2 node(s)"),
    ],
)
def test_slurm_contradictions(env, nodes, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        apply_slurm(nodes, None, None, slurm_step(env))


def test_no_slurm_outside_a_job():
    assert slurm_step({"HOME": "/root"}) is None


def test_mpi_launcher_environments():
    assert identity_from_env(OPEN_MPI_RANK_2) == {
        "RANK": "2",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "2",
    }
    assert identity_from_env(MPICH_RANK_3) == {
        "RANK": "3",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
    }


def test_commprof_run_knows_when_an_mpi_launcher_started_it():
    assert started_by_mpi_launcher(OPEN_MPI_RANK_2) and started_by_mpi_launcher(MPICH_RANK_3)
    assert not started_by_mpi_launcher({**OPEN_MPI_RANK_2, "OMPI_COMM_WORLD_SIZE": "1"})
    assert not started_by_mpi_launcher(SRUN_TASK_ON_NODE_1)
    # srun --mpi=pmi2 exports PMI_RANK to every task: one task per node is still one commprof per node ...
    assert not started_by_mpi_launcher({**SRUN_TASK_ON_NODE_1, "PMI_RANK": "1", "PMI_SIZE": "2"})
    # ... while eight tasks per node are eight ranks
    assert started_by_mpi_launcher(
        {**SRUN_TASK_ON_NODE_1, "SLURM_STEP_NUM_TASKS": "16", "PMI_RANK": "9", "PMI_SIZE": "16"}
    )


def test_local_rank_from_mpi_when_the_launcher_gives_none():
    plain_pmi = {"PMI_RANK": "9", "PMI_SIZE": "16"}
    assert identity_from_env(plain_pmi, lambda: (1, 8)) == {
        "RANK": "9",
        "WORLD_SIZE": "16",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "8",
    }
    with pytest.raises(UsageError, match="no local rank"):
        identity_from_env(plain_pmi)  # never the global rank taken for a local one


@pytest.mark.parametrize("local_rank, visible, index", [(3, 8, 3), (3, 1, 0), (0, 1, 0), (0, 4, 0)])
def test_each_rank_finds_its_gpu(local_rank, visible, index):
    assert gpu_index(local_rank, visible) == index


def test_a_rank_without_its_gpu_says_so():
    with pytest.raises(RuntimeError, match="local rank 3 sees 2 GPU"):
        gpu_index(3, 2)


def test_one_gpu_bound_to_each_rank(tmp_path, monkeypatch):
    """CUDA_VISIBLE_DEVICES per rank: each of 8 ranks on a node sees one GPU; the job is still 8 GPUs a node. A rank
    mpirun started checks no rendezvous endpoint (node0 does not resolve here): no elastic launch follows."""
    monkeypatch.chdir(tmp_path)
    one_gpu = MachineProbe(cuda_available=True, gpu_count=1, nccl_available=True, mpi_available=False)
    config = rank_config(RunRequest(), one_gpu, world=16, local=8, endpoint="node0:4242", run_id="bound")
    assert (config.device, config.backend, config.nodes, config.procs_per_node) == ("cuda", "nccl", 2, 8)


@pytest.mark.slow  # bash -n checks the script
def test_emit_sbatch_prints_a_valid_script(tmp_path):
    result = commprof_here(
        "run",
        "--emit-sbatch",
        "--nodes",
        "2",
        "--gpus",
        "8",
        "--bucket-cap-mb",
        "50",
        "--static-graph",
        "--run-id",
        "ignored",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    script = result.stdout
    assert script.startswith("#!/bin/bash\n") and "#SBATCH --nodes=2" in script
    for line in ("#SBATCH --ntasks-per-node=1", "#SBATCH --exclusive", "#SBATCH --gpus-per-node=8"):
        assert line in script
    last = script.strip().splitlines()[-1]
    # the command its last line runs, argument by argument (the CPUs variable quoted: one argument, however set)
    assert shlex.split(last) == [
        "srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--cpus-per-task=$SLURM_CPUS_ON_NODE",
        "commprof", "run", "--nodes", "2", "--gpus", "8", "--bucket-cap-mb", "50.0", "--static-graph",
    ]  # fmt: skip
    assert '--cpus-per-task="$SLURM_CPUS_ON_NODE"' in last.split()
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_sbatch_script_asks_for_what_the_ranks_need():
    cpu = sbatch_script(2, None, 4, ["--procs", "4"])
    assert "#SBATCH --exclusive" in cpu and "--gpus-per-node" not in cpu
    with pytest.raises(UsageError, match="--emit-sbatch needs --gpus N"):
        sbatch_script(2, None, None, [])


@pytest.mark.slow
@pytest.mark.takes(31, "two commprof processes, one a node, each importing torch and starting its fork server")
def test_two_nodes_from_a_slurm_step(tmp_path):
    """Two 'nodes' on this machine, each told by SLURM variables who it is; nothing else given."""
    host = socket.gethostname()
    nodes = []
    for node in (0, 1):
        env = {
            **os.environ,
            **SRUN_TASK_ON_NODE_1,
            "SLURM_NODEID": str(node),
            "SLURM_PROCID": str(node),
            "SLURM_JOB_ID": "4242",
            "SLURM_STEP_NODELIST": f"{host},{host}",
            "SLURMD_NODENAME": host,
        }
        nodes.append(
            subprocess.Popen(
                [sys.executable, "-m", "commprof", "run", "--procs", "1", "--quiet", *FAST_RUN],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [n.communicate(timeout=300) for n in nodes]
    assert [n.returncode for n in nodes] == [0, 0], outputs
    run = load_json(tmp_path / "traces" / "slurm-4242.0" / "run.json")
    assert run["world_size"] == 2 and run["config"]["rdzv_endpoint"] == f"{host}:{29500 + 4242}"
    assert (tmp_path / "reports" / "slurm-4242.0" / "report.json").is_file()


def test_sbatch_script_runs_the_users_script():
    from commprof.commands.run import sbatch

    script = sbatch(
        RunRequest(nodes=2, gpus=8, script=("train.py", "--lr", "0.1"), cli_args=("--nodes", "2", "--gpus", "8"))
    )
    argv = shlex.split(script.strip().splitlines()[-1])
    assert argv[argv.index("commprof") :] == [
        "commprof",
        "run",
        "--nodes",
        "2",
        "--gpus",
        "8",
        "--",
        "train.py",
        "--lr",
        "0.1",
    ]
