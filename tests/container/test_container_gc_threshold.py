"""The container raises the garbage collector's young-generation threshold, so envelopes held
for a moment in buffers and runs die young instead of bringing forward full collections (see
samza_dagster/container/gc_threshold.py for the measurement behind it)."""

from __future__ import annotations

import gc

import pytest

from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.container.gc_threshold import hold_gc_threshold

KEY = keys.JOB_CONTAINER_GC_THRESHOLD.name


@pytest.fixture
def python_default_threshold():
    before = gc.get_threshold()
    gc.set_threshold(700, before[1], before[2])
    yield
    gc.set_threshold(*before)


def test_default_raises_the_young_threshold_and_keeps_the_older_ones(python_default_threshold):
    _, middle, old = gc.get_threshold()
    lease = hold_gc_threshold(Config({}))
    assert lease.value == 50_000
    assert gc.get_threshold() == (50_000, middle, old)
    lease.release()
    assert gc.get_threshold() == (700, middle, old)


def test_never_lowers_a_threshold_already_higher(python_default_threshold):
    gc.set_threshold(200_000)
    lease = hold_gc_threshold(Config({KEY: "1000"}))
    assert lease.value == 200_000
    lease.release()
    assert gc.get_threshold()[0] == 200_000


def test_zero_leaves_it_alone_and_bad_values_name_the_key(python_default_threshold):
    lease = hold_gc_threshold(Config({KEY: "0"}))
    assert lease.value == 700
    lease.release()
    with pytest.raises(ConfigError, match=KEY):
        hold_gc_threshold(Config({KEY: "-1"}))
    with pytest.raises(ConfigError, match=KEY):
        hold_gc_threshold(Config({KEY: "lots"}))
