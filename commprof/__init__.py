"""commprof: communication profiler and all-reduce analysis for PyTorch DDP."""

__version__ = "0.1.0"
