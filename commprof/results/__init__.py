"""The family of results every command returns: typed, frozen, versioned (`schema_version`), saved
as report.json and loaded back one way (results.store), rendered only by commprof.render.

| kind | class | made by |
| --- | --- | --- |
| run, analysis, sweep, tune | results.report.Report | commprof run / analyze / sweep / tune |
| scale | results.scale.ScaleReport | commprof scale |
| bench | results.bench.BenchResult | commprof bench |
| compare | results.compare.CompareResult | commprof compare |
| backends | results.backends.BackendsResult | commprof backends |
| diff | results.diff.DiffResult | commprof diff |
"""
