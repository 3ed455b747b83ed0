from hypothesis import given
from hypothesis import strategies as st

from commprof.trace.intervals import clip, intersect, merge, subtract, total


def test_merge_joins_overlapping_and_touching_and_drops_empty():
    assert merge([(5, 7), (0, 2), (1, 3), (3, 4), (9, 9)]) == [(0, 4), (5, 7)]


def test_clip_keeps_parts_inside_the_window():
    assert clip([(0, 4), (5, 7), (8, 12)], 3, 9) == [(3, 4), (5, 7), (8, 9)]
    assert clip([(0, 4)], 4, 9) == []


def test_intersect_and_subtract():
    a, b = [(0, 10), (20, 30)], [(5, 25)]
    assert intersect(a, b) == [(5, 10), (20, 25)]
    assert subtract(a, b) == [(0, 5), (25, 30)]
    assert subtract([(0, 10)], [(2, 3), (4, 5)]) == [(0, 2), (3, 4), (5, 10)]


def _cover(intervals):
    return {t for s, e in intervals for t in range(s, e)}


spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)).map(lambda p: (p[0], p[0] + p[1])), max_size=12)


@given(spans, spans)
def test_against_unit_cells(a, b):
    ma, mb = merge(a), merge(b)
    assert _cover(ma) == _cover(a) and total(ma) == len(_cover(a))
    assert _cover(intersect(ma, mb)) == _cover(a) & _cover(b)
    assert _cover(subtract(ma, mb)) == _cover(a) - _cover(b)
    assert _cover(clip(ma, 10, 40)) == _cover(a) & set(range(10, 40))
