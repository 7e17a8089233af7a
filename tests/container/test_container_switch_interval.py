"""The container lowers the interpreter's switch interval so poller threads are not starved by
a CPU-bound task (see samza_dagster/container/gil.py for the measurement behind it)."""

from __future__ import annotations

import sys

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container.gil import SWITCH_INTERVAL_KEY, apply_switch_interval


@pytest.fixture
def restore_switch_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_default_lowers_the_interval_to_half_a_millisecond(restore_switch_interval):
    sys.setswitchinterval(0.005)
    assert apply_switch_interval(Config({})) == pytest.approx(0.0005)


def test_never_raises_an_interval_already_lower(restore_switch_interval):
    sys.setswitchinterval(0.0001)
    assert apply_switch_interval(Config({SWITCH_INTERVAL_KEY: "2000"})) == pytest.approx(0.0001)


def test_zero_leaves_the_interval_alone_and_bad_values_name_the_key(restore_switch_interval):
    sys.setswitchinterval(0.005)
    assert apply_switch_interval(Config({SWITCH_INTERVAL_KEY: "0"})) == pytest.approx(0.005)
    with pytest.raises(ConfigError, match=SWITCH_INTERVAL_KEY):
        apply_switch_interval(Config({SWITCH_INTERVAL_KEY: "-1"}))
    with pytest.raises(ConfigError, match=SWITCH_INTERVAL_KEY):
        apply_switch_interval(Config({SWITCH_INTERVAL_KEY: "fast"}))
