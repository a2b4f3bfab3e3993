"""The skip policy plugin (``tests/_skip_policy.py``), run on small generated test files with pytester."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_a_missing_dependency_fails_and_opt_in_tests_skip(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_missing="""
        import pytest

        def test_needs_a_missing_package():
            pytest.importorskip("a_package_that_is_not_installed_3f9a")

        @pytest.mark.skipif(True, reason="opt-in: SIEVE_TEST_SOMETHING=1")
        def test_opt_in():
            pass

        def test_plain():
            assert True
        """,
        test_module_level="""
        import pytest

        pytest.importorskip("another_missing_package_3f9a")

        def test_never_collected():
            pass
        """,
    )
    # no:benchmark as in pyproject: pytest-benchmark, where installed, warns under xdist.
    result = pytester.runpytest("-p", "_skip_policy", "-p", "no:benchmark", "-rs", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, skipped=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*SKIPPED*opt-in: SIEVE_TEST_SOMETHING=1*"])
    result.stdout.fnmatch_lines(["*Expected only opt-in tests*a_package_that_is_not_installed_3f9a*"])
