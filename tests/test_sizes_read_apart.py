"""Sizes are printed with enough digits to tell different ones apart: a collective's bytes, a bucket's. Two rows of
one sweep never both read '1.00 MiB' unless they are the same size. (The buckets of a layout, said in render/'s
words with a decimal more where one would read two different sizes alike: test_render_model_words.py.)"""

from commprof.kinds.ddp_buckets import MB
from commprof.values import human_bytes


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
