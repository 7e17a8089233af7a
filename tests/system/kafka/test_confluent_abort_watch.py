"""The confluent producer learns that the cluster aborted its transaction from librdkafka's log
line (confluent_producer._AbortWatch): librdkafka reports the abortable state only at the next
commit, and a flush would otherwise wait for in-flight sends until they time out. The lines below
are librdkafka 2.12's, as a traced run logged them."""

from __future__ import annotations

import logging

from samza_dagster.system.kafka.confluent_producer import _AbortWatch

ABORTED = (
    "[thrd:127.0.0.1:37263/3]: Current transaction failed in state InTransaction: skipped sequence "
    "numbers (OUT_OF_ORDER_SEQUENCE_NUMBER, requires epoch bump)"
)


def test_the_line_of_an_aborted_transaction_is_noted_and_every_line_passed_on(caplog):
    noted: list[str] = []
    watch = _AbortWatch(logging.getLogger("rdk-test"), noted.append)
    with caplog.at_level(logging.DEBUG, logger="rdk-test"):
        watch.log(logging.DEBUG, "%s [%s] %s", "TXNSTATE", "rdkafka#producer-8", "[thrd:main]: Ready -> InTransaction")
        watch.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-8", "[thrd:x]: Connect failed")
        watch.log(logging.DEBUG, "%s [%s] %s", "TXNERR", "rdkafka#producer-8", "[thrd:x]: Ignoring sub-sequent error")
        assert noted == []
        watch.log(logging.ERROR, "%s [%s] %s", "TXNERR", "rdkafka#producer-8", ABORTED)
    assert noted == [ABORTED.split("]: ", 1)[1]]
    assert [r.getMessage().split(" ", 1)[0] for r in caplog.records] == ["TXNSTATE", "FAIL", "TXNERR", "TXNERR"]
