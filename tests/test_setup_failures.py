"""Set-up failures across hosts, each one line naming the cause and the fix (docs/reliability.md, Set-up failures):
this host's name that does not resolve (--local-addr), a rendezvous endpoint this node cannot reach, Gloo bound to an
interface this host lacks or to loopback. The checks are pure over a `Host` of answers; the slow tests reproduce a
host whose name does not resolve with a UTS namespace of its own."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from commprof.config import RunConfig
from commprof.errors import RunFailed, SetupError, UsageError, what_went_wrong
from commprof.launch.preflight import (
    CONNECTED,
    REFUSED,
    Host,
    check_setup,
    endpoint_is_here,
    endpoint_problem,
    failed_setup,
    gloo_interface_problem,
    own_address_problem,
)
from commprof.render.failure_words import setup_text
from commprof.results.failure_facts import SetupProblem


def no_such_name(name: str) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def table(names: dict[str, list[str]]):
    """A resolver that knows only `names`."""
    return lambda name: names[name] if name in names else no_such_name(name)


HERE = Host(
    name=lambda: "node1",
    resolve=table({"node1": ["10.0.0.2"], "node0": ["10.0.0.1"], "127.0.0.1": ["127.0.0.1"]}),
    is_own=lambda address: address in ("10.0.0.2", "127.0.0.1"),
    interfaces=lambda: ["lo", "eth0"],
    is_loopback_interface=lambda name: name == "lo",
    connect=lambda host, port, timeout: REFUSED,
    store_answers=lambda host, port, timeout: True,
)
NAMELESS = replace(HERE, name=lambda: "nosuchhost")
TWO_NODES = RunConfig(run_id="x", nodes=2, rdzv_endpoint="node0:29400")


def test_a_host_whose_name_does_not_resolve_is_told_to_add_it_or_pass_local_addr():
    assert own_address_problem(None, 1, NAMELESS) == SetupProblem("host_name", "nosuchhost", one_node=True)
    assert own_address_problem(None, 2, NAMELESS) == SetupProblem("host_name", "nosuchhost", one_node=False)
    assert own_address_problem("127.0.0.1", 1, NAMELESS) is None  # --local-addr: the name is not needed
    assert own_address_problem(None, 1, HERE) is None


def test_local_addr_must_resolve_to_an_address_of_this_host():
    assert own_address_problem("node0", 2, HERE) == SetupProblem("local_addr_foreign", "node0", ("10.0.0.1",))
    assert own_address_problem("elsewhere", 2, HERE) == SetupProblem("local_addr", "elsewhere")
    assert own_address_problem("node1", 2, HERE) is None


def test_the_real_host_holds_loopback_and_not_a_documentation_address():
    real = Host()
    assert real.is_own("127.0.0.1") and not real.is_own("192.0.2.1")  # bind only: no packet leaves


@pytest.mark.parametrize(
    "outcome, problem",
    [
        (REFUSED, None),  # nothing listens yet: node 0 hosts the store once it starts
        ("no route to host", SetupProblem("endpoint_unreachable", "node0:29400", why="no route to host")),
        ("no answer within 3 s", SetupProblem("endpoint_unreachable", "node0:29400", why="no answer within 3 s")),
    ],
)
def test_an_endpoint_this_node_cannot_reach_is_named(outcome, problem):
    host = replace(HERE, connect=lambda name, port, timeout: outcome)
    assert endpoint_problem("node0:29400", host) == problem


def test_an_endpoint_that_does_not_resolve_or_is_not_a_store():
    assert endpoint_problem("nowhere:29400", HERE) == SetupProblem("endpoint_name", "nowhere:29400")
    foreign = replace(HERE, connect=lambda *a: CONNECTED, store_answers=lambda *a: False)
    assert endpoint_problem("node0:29400", foreign) == SetupProblem("endpoint_not_store", "node0:29400")
    assert endpoint_problem(None, HERE) is None


def test_gloo_socket_ifname_must_name_interfaces_of_this_host():
    assert gloo_interface_problem({"GLOO_SOCKET_IFNAME": "ib0"}, HERE) == SetupProblem(
        "gloo_interface", "ib0", ("ib0",), ("lo", "eth0")
    )
    assert gloo_interface_problem({"GLOO_SOCKET_IFNAME": "eth0,ib1"}, HERE) == SetupProblem(
        "gloo_interface", "eth0,ib1", ("ib1",), ("lo", "eth0")
    )
    assert gloo_interface_problem({"GLOO_SOCKET_IFNAME": "eth0"}, HERE) is None
    assert gloo_interface_problem({}, HERE) is None


def test_gloo_bound_to_loopback_across_hosts_is_refused():
    looped = replace(HERE, resolve=table({"node1": ["127.0.1.1"], "node0": ["10.0.0.1"], "127.0.0.1": ["127.0.0.1"]}))
    with pytest.raises(SetupError) as refused:
        check_setup(TWO_NODES, looped, environ={})
    assert refused.value.problem == SetupProblem("gloo_loopback", "node1", ("127.0.1.1",), ("lo", "eth0"))
    check_setup(TWO_NODES, looped, environ={"GLOO_SOCKET_IFNAME": "eth0"})  # told where to bind: fine
    check_setup(replace(TWO_NODES, rdzv_endpoint="127.0.0.1:29400"), looped, environ={})  # nodes on one machine
    check_setup(TWO_NODES, HERE, environ={})


def test_gloo_told_to_bind_to_a_loopback_interface_across_hosts_is_refused():
    with pytest.raises(SetupError) as refused:
        check_setup(TWO_NODES, HERE, environ={"GLOO_SOCKET_IFNAME": "lo"})
    assert refused.value.problem == SetupProblem("gloo_interface_loopback", "lo", interfaces=("lo", "eth0"))
    check_setup(TWO_NODES, HERE, environ={"GLOO_SOCKET_IFNAME": "lo,eth0"})  # one of them reaches the others
    check_setup(replace(TWO_NODES, rdzv_endpoint="127.0.0.1:29400"), HERE, environ={"GLOO_SOCKET_IFNAME": "lo"})
    assert Host().is_loopback_interface("lo")


def test_gloo_connect_errors_get_the_fix_once():
    from commprof.errors import what_went_wrong

    line = what_went_wrong("RuntimeError: Gloo connectFullMesh failed with [pair.h:311] Connect timeout [none]")
    assert line.count("Gloo's ranks could not connect") == 1


def test_check_setup_names_the_first_problem():
    with pytest.raises(SetupError) as refused:  # a usage error: exit code 2
        check_setup(RunConfig(run_id="x"), NAMELESS, environ={})
    assert isinstance(refused.value, UsageError) and refused.value.problem.problem == "host_name"
    check_setup(RunConfig(run_id="x", local_addr="127.0.0.1"), NAMELESS, environ={})


def test_torch_is_told_whether_this_node_hosts_the_store_when_it_cannot_tell():
    """torch compares the endpoint's host with this host's name, resolving it: gaierror where it does not resolve."""
    nameless_here = replace(NAMELESS, resolve=table({"node1": ["10.0.0.2"], "node0": ["10.0.0.1"]}))
    assert endpoint_is_here("node1:29400", nameless_here) is True
    assert endpoint_is_here("node0:29400", nameless_here) is False
    assert endpoint_is_here("127.0.0.1:29400", nameless_here) is None
    assert endpoint_is_here("node0:29400", HERE) is None  # the name resolves: torch's own heuristic


def test_a_launch_that_failed_on_this_hosts_name_says_so():
    message = (
        "DistNetworkError: The client socket has timed out after 300000ms while trying to connect to (nosuchhost, "
        "33743)."
    )
    assert failed_setup(message, RunConfig(run_id="x"), NAMELESS) == own_address_problem(None, 1, NAMELESS)
    gaierror = "gaierror: [Errno -3] Temporary failure in name resolution"
    assert failed_setup(gaierror, RunConfig(run_id="x"), NAMELESS) == own_address_problem(None, 1, NAMELESS)
    other = replace(HERE, resolve=table({"node1": ["10.0.0.2"]}))
    assert failed_setup(message, RunConfig(run_id="x"), other) == SetupProblem("peer_name", "nosuchhost:33743")
    assert failed_setup("RuntimeError: something else", RunConfig(run_id="x"), NAMELESS) is None


def test_gloo_errors_of_the_ranks_say_what_to_set():
    missing = "[enforce fail at gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address for: ib0"
    assert what_went_wrong(missing) == (
        f"{missing} (GLOO_SOCKET_IFNAME names an interface this host lacks (`ip -brief link`))"
    )
    assert "set GLOO_SOCKET_IFNAME on every node" in what_went_wrong("Gloo connectFullMesh failed with [pair.cc] ...")


def test_an_empty_log_folder_is_never_named(tmp_path):
    from commprof.launch.launcher import worth_naming

    temporary = Path(tempfile.mkdtemp(prefix="commprof-logs-"))
    (temporary / "x" / "attempt_0" / "0").mkdir(parents=True)
    (temporary / "x" / "attempt_0" / "0" / "stderr.log").write_text("")
    assert worth_naming(temporary) is None and not temporary.exists()  # removed: nothing there
    (tmp_path / "stderr.log").write_text("Traceback ...")
    assert worth_naming(tmp_path) == tmp_path
    assert str(RunFailed("cause", logs=None)) == "cause"


def test_launch_config_carries_local_addr(tmp_path):
    from commprof.launch.launcher import launch_config

    launched = launch_config(RunConfig(run_id="x", local_addr="127.0.0.1"), tmp_path)
    assert launched.local_addr == "127.0.0.1" and "is_host" not in launched.rdzv_configs  # loopback: torch decides


# Slow: a host whose own name does not resolve, made with a UTS namespace (its own hostname) ---------------------

NO_UNSHARE = shutil.which("unshare") is None or os.geteuid() != 0


def in_uts(hostname: str, *args: str, cwd: Path, timeout: float = 240) -> tuple[subprocess.CompletedProcess, float]:
    script = 'hostname "$0" && exec "$@"'
    argv = ["unshare", "--uts", "sh", "-c", script, hostname, sys.executable, "-m", "commprof", *args]
    started = time.monotonic()
    result = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "COLUMNS": "200"}
    )
    return result, time.monotonic() - started


def uts_works() -> str | None:
    if NO_UNSHARE:
        return "needs unshare and root (a UTS namespace gives the run its own hostname)"
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare --uts refused here: {probe.stderr.strip()}"


@pytest.mark.slow
@pytest.mark.skipif(uts_works() is not None, reason=str(uts_works()))
def test_a_run_on_a_host_whose_name_does_not_resolve_says_so_in_seconds(tmp_path):
    assert not Host().resolves("nosuchhost.cps7-invalid")
    result, took = in_uts(
        "nosuchhost.cps7-invalid", "run", "--steps", "6", "--schedule", "2,1,2", "--quiet", cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    unresolved = SetupProblem("host_name", "nosuchhost.cps7-invalid", one_node=True)  # found before the launch
    assert result.stderr.strip() == f"error: {setup_text(unresolved)}"
    assert took < 30, took  # not the rendezvous timeout (300 s)
    assert not (tmp_path / "traces").exists() or not any((tmp_path / "traces").iterdir())


@pytest.mark.slow
@pytest.mark.skipif(uts_works() is not None, reason=str(uts_works()))
def test_local_addr_runs_on_a_host_whose_name_does_not_resolve(tmp_path):
    result, _ = in_uts(
        "nosuchhost.cps7-invalid",
        *("run", "--steps", "6", "--schedule", "2,1,2", "--batch-size", "8", "--quiet"),
        *("--local-addr", "127.0.0.1", "--run-id", "local-addr"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "reports" / "local-addr" / "report.json").is_file()
