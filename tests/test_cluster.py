"""`commprof analyze --cluster`: the per-rank map as tasks on a Dask cluster (here a LocalCluster of 2 worker
processes on this machine), the reduce here; the report equals the local one, field by field."""

import json

import pytest

from tests.conftest import commprof

distributed = pytest.importorskip("distributed", reason="Dask is optional: pip install 'commprof[cluster]'")
pytestmark = pytest.mark.slow
SAME_EXCEPT = {"name", "created"}


def test_the_report_from_a_dask_cluster_equals_the_local_one(cpu_run, tmp_path):
    cwd, _ = cpu_run
    traces = cwd / "traces" / "e2e"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = commprof(
            "analyze",
            str(traces),
            "--name",
            "remote",
            "--cluster",
            cluster.scheduler_address,
            "--reports-dir",
            str(tmp_path),
            "--json",
            cwd=tmp_path,
        )
        assert remote.returncode == 0, remote.stderr
        ran = {name: sum(prefix.all_durations.values()) for name, prefix in cluster.scheduler.task_prefixes.items()}
    local = commprof("analyze", str(traces), "--name", "local", "--reports-dir", str(tmp_path), "--json", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    there, here = json.loads(remote.stdout), json.loads(local.stdout)
    assert there.keys() == here.keys()
    for field in here.keys() - SAME_EXCEPT:
        assert there[field] == here[field], field
    assert here["ranks"] and here["cross_rank"]["matched_collectives"] > 0
    assert ran.get("load_and_prepare", 0) > 0  # the ranks were loaded and digested by the cluster's workers


def test_no_scheduler_at_the_address_is_one_line(tmp_path, cpu_run):
    cwd, _ = cpu_run
    result = commprof(
        "analyze",
        str(cwd / "traces" / "e2e"),
        "--cluster",
        "tcp://127.0.0.1:9",
        "--name",
        "x",
        "--reports-dir",
        str(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert (
        line.startswith("error: --cluster tcp://127.0.0.1:9: no Dask scheduler answered")
        and "Traceback" not in result.stderr
    )
