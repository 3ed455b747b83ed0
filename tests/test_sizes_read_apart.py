"""Sizes are printed with enough digits to tell different ones apart: a collective's bytes, a bucket's, the buckets
of a layout. Two rows of one sweep never both read '1.00 MiB' unless they are the same size."""

from commprof.kinds.ddp_buckets import MB
from commprof.render.kind_words import describe
from commprof.values import human_bytes

# tests/data/scripts/train_default_ddp.py's buckets: DDP's default, and bucket_cap_mb=1
OWN_BUCKETS = [1_062_952, 2_105_344]
CAP_1_BUCKETS = [1_062_952, 1_052_672, 1_052_672]


def test_sizes_read_apart():
    sizes = [1_048_576, 1_050_624, 1_052_672, 1_062_952, 1_071_144, 133_120, 20_520, 3_168_296, 4 * MB]
    shown = [human_bytes(n) for n in sizes]
    assert shown == [
        "1.00 MiB",
        "1.002 MiB",
        "1.004 MiB",
        "1.014 MiB",
        "1.022 MiB",
        "130.00 KiB",
        "20.04 KiB",
        "3.022 MiB",
        "4.00 MiB",
    ]
    assert len(set(shown)) == len(sizes)
    assert human_bytes(512) == "512 B" and human_bytes(None) == "unknown"
    # bucket layouts: a decimal more where one would read two different sizes alike
    assert describe(OWN_BUCKETS) == "2 buckets: 1.0, 2.0 MiB"
    assert describe(CAP_1_BUCKETS) == "3 buckets: 1.01, 1.00, 1.00 MiB"
    assert describe([MB // 4] * 63 + [4 * MB]) == "64 buckets of 0.2 to 4.0 MiB"
