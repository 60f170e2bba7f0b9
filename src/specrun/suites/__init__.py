"""Suites: a benchmark of benchmarks in YAML, each member a spec's split and metric, aggregated with an interval
over joint resamples of the members' units. Above the runner: a suite runs its members through it."""

from specrun.suites.model import LoadedSuite, Suite, is_suite_file, load_suite
from specrun.suites.run import SuiteOutput, run_suite

__all__ = ["LoadedSuite", "Suite", "SuiteOutput", "is_suite_file", "load_suite", "run_suite"]
