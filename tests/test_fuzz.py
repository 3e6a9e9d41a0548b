"""Quick fuzz profile of every target in tests/fuzz_targets.py (the long one: `make fuzz`).

Each input must either be read or be refused with SpecModelError (the CLI: exit 0 or 2 with a
message, never a traceback). A failure shows the shrunk input that escaped."""

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz_targets import TARGETS, check

QUICK = settings(max_examples=150, deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy overflow warnings on huge inputs are fine
@pytest.mark.parametrize("name, strategy, function", TARGETS, ids=[t[0] for t in TARGETS])
def test_only_the_user_facing_error_escapes(name, strategy, function):
    @QUICK
    @given(strategy)
    def run(value):
        check(function, value)

    run()
