"""bounds.bounded_cache counts a frozen dataclass argument's text once per object (the run reader passes
the same RunDefaults with every row) and still runs a call with more than MAX_CACHED_KEY_CHARS
characters uncached, whether the text is in a string, a tuple or a dataclass."""

from dataclasses import dataclass

from specmodel.bounds import MAX_CACHED_KEY_CHARS, bounded_cache


@dataclass(frozen=True)
class Settings:
    name: str
    tags: tuple = ()


def test_long_text_in_any_argument_runs_uncached():
    calls = []

    @bounded_cache(16)
    def read(texts, settings, n=1):
        calls.append(1)
        return len(calls)

    short, long = Settings("L40S"), Settings("x" * (MAX_CACHED_KEY_CHARS + 1))
    assert read(("a", "b"), short) == read(("a", "b"), short) == 1  # cached
    read(("a", "b"), long), read(("a", "b"), long)
    assert len(calls) == 3 and read.cache_info().currsize == 1  # the long one twice, never kept
    nested = Settings("n", tags=("y" * MAX_CACHED_KEY_CHARS, "z"))
    read(("a",), nested), read(("a",), nested)
    assert len(calls) == 5
    read(("q" * 200, "r" * 100), short), read(("q" * 200, "r" * 100), short)
    assert len(calls) == 7
    read(("a",), short, n="w" * (MAX_CACHED_KEY_CHARS + 1)), read(("a",), short, n="w" * (MAX_CACHED_KEY_CHARS + 1))
    assert len(calls) == 9 and read.cache_info().currsize == 1


def test_a_cache_keyed_by_its_first_argument_passes_the_rest_through_and_stays_bounded():
    from specmodel.bounds import bounded_cache

    calls = []

    @bounded_cache(2, key_args=1)
    def plan_of(scenario, summary):
        calls.append(scenario)
        return (scenario, summary)

    assert plan_of("a", ["unhashable summary"]) == ("a", ["unhashable summary"])
    assert plan_of("a", ["another"]) == ("a", ["unhashable summary"])  # the first argument alone keys it
    plan_of("b", None), plan_of("c", None)  # "a" is the least recently used of three: dropped
    plan_of("a", None)
    assert calls == ["a", "b", "c", "a"]
    info = plan_of.cache_info()
    assert (info.hits, info.misses, info.currsize, info.maxsize) == (1, 4, 2, 2)
    long_key = "x" * 10_000  # too long to hold: runs uncached every time
    plan_of(long_key, None), plan_of(long_key, None)
    assert calls[-2:] == [long_key, long_key]


def test_engine_versions_named_in_files_do_not_grow_the_engine_cache_past_its_bound():
    # A version is a user's text: every distinct one named in a run file or a link was kept for good before.
    from specmodel.model import engines

    first = engines.find_engine("vllm 0.1.1")
    for minor in range(600):
        engines.find_engine(f"vllm 0.{minor}.7")
    assert engines._engine_as_written.cache_info().currsize <= 256
    assert engines.find_engine("vllm 0.1.1") == first  # an engine read again is the same engine
