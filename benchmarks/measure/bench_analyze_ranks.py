"""`commprof analyze` at 64, 256 and 1024 ranks (issue 8): wall time and peak memory against rank count.

    python benchmarks/measure/bench_analyze_ranks.py --workdir /tmp/bench-ranks [--ranks 64,256,1024]
        [--local-cluster 2]

The ranks are made from one real rank of a 300-rank Gloo job (benchmarks/generate/make_rank_traces.py:
clock offsets per host, speed jitter, one straggler). Each size is analysed by a fresh
`commprof analyze` with every core; peak memory (VmHWM) of the main process and of the largest
worker is read from /proc while it runs. With --local-cluster N the map runs on a Dask LocalCluster of N worker
processes started here (`commprof analyze --cluster`); the workers' memory is then not measured. Prints a table
and the least-squares slopes."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, SHARED_TRACES, children, commprof_argv, peak_kib, read_report  # noqa: E402

SOURCE = SHARED_TRACES / "gloo-cpu-rank34-of-300" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def analyse(folder: Path, reports: Path, cluster: str | None = None) -> dict:
    start = time.perf_counter()
    process = subprocess.Popen(
        commprof_argv(
            "analyze",
            str(folder),
            "--quiet",
            "--reports-dir",
            str(reports),
            "--name",
            folder.name,
            *(["--cluster", cluster] if cluster else []),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    main_peak, worker_peak, workers = 0, 0, set()
    while process.poll() is None:
        main_peak = max(main_peak, peak_kib(process.pid))
        for child in children(process.pid):
            workers.add(child)
            worker_peak = max(worker_peak, peak_kib(child))
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"analyze failed: {process.stderr.read()}")
    return {
        "seconds": seconds,
        "main_peak_mib": main_peak / 1024,
        "worker_peak_mib": worker_peak / 1024,
        "workers": len(workers),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--ranks", default="64,256,1024")
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--local-cluster", type=int, default=0, help="Dask worker processes (0: no Dask)")
    args = parser.parse_args()
    cluster = None
    if args.local_cluster:
        from distributed import LocalCluster

        cluster = LocalCluster(
            n_workers=args.local_cluster, threads_per_worker=1, processes=True, dashboard_address=None
        )
    rows = []
    for n in (int(x) for x in args.ranks.split(",")):
        folder = args.workdir / f"ranks-{n}"
        if not folder.is_dir():
            subprocess.run(
                [
                    sys.executable,
                    str(REPO / "benchmarks" / "generate" / "make_rank_traces.py"),
                    str(args.source),
                    str(folder),
                    "--ranks",
                    str(n),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        size = sum(p.stat().st_size for p in folder.iterdir())
        result = analyse(folder, args.workdir / "reports", cluster.scheduler_address if cluster else None)
        report = read_report(args.workdir, folder.name)
        rows.append(
            {
                "ranks": n,
                "gzip_mb": size / 1e6,
                **result,
                "report_ranks": len(report["ranks"]),
                "straggler": (report.get("cross_rank") or {}).get("straggler"),
            }
        )
        (args.workdir / "reports" / folder.name).rename(args.workdir / f"report-{n}-{int(time.time())}")
    print("| ranks | traces (gzip) | wall s | main process peak MiB | largest worker peak MiB | straggler found |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['ranks']} | {r['gzip_mb']:.0f} MB | {r['seconds']:.1f} | {r['main_peak_mib']:.0f} | "
            f"{r['worker_peak_mib']:.0f} | rank {r['straggler']} |"
        )
    if len(rows) > 1:
        ranks = [r["ranks"] for r in rows]
        time_slope, time_base = statistics.linear_regression(ranks, [r["seconds"] for r in rows])
        memory_slope, memory_base = statistics.linear_regression(ranks, [r["main_peak_mib"] for r in rows])
        print(
            f"time: {time_base:.1f} s + {1000 * time_slope:.1f} ms per rank; main process memory: "
            f"{memory_base:.0f} MiB + {1024 * memory_slope:.0f} KiB per rank; largest worker: "
            f"{min(r['worker_peak_mib'] for r in rows):.0f}-{max(r['worker_peak_mib'] for r in rows):.0f} MiB"
        )
    (args.workdir / "results.json").write_text(json.dumps(rows, indent=2))
    if cluster is not None:
        cluster.close()


if __name__ == "__main__":
    main()
