"""CurrencyJoinTask: symbols from the bootstrap stream into a store; transactions joined.

Evidence kept per task (why: a bootstrap stream's promise is an ordering, and an ordering can only be
checked by the one who processed the messages): at ``init`` the task asks the admin where the
head of each of its ``currency_codes`` partitions is, and each output message carries
``codes_at_head`` — whether every one of those partitions had been processed to that head when
the transaction was joined. ``currency_codes`` has ``samza.reset.offset=true``: every start
re-reads it from the oldest offset (Samza's "from offset 0 all the way to head"), so after a
restart the symbols are loaded again before any transaction, and a symbol changed in the
meantime is current; the store (RocksDB + changelog) keeps them between messages. A transaction whose currency has no symbol is still emitted, with
``"symbol": null`` — never dropped silently — so a missing bootstrap shows up in the output.
"""

from __future__ import annotations

from typing import Any

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system import system_factory
from samza_dagster.task import InitableTask, StreamTask

CODES = "currency_codes"


class CurrencyJoinTask(StreamTask, InitableTask):
    def init(self, context: Any) -> None:
        config = context.config
        self.store = context.get_store("currency-symbols")
        self.output = SystemStream("log", config.get_str("currency_join.output.stream", "transactions_with_symbol"))
        code_ssps = [ssp for ssp in context.system_stream_partitions if ssp.stream == CODES]
        # the newest offset of each currency_codes partition now: "head" as Samza's bootstrap defines it
        self.heads: dict[int, int] = {}
        if code_ssps:
            system = code_ssps[0].system
            admin = system_factory(config, system).get_admin(system, config)
            md = admin.get_system_stream_metadata([CODES])[CODES]
            for ssp in code_ssps:
                newest = md.partitions[ssp.partition].newest_offset
                if newest is not None:
                    self.heads[ssp.partition] = int(newest)
        self.done: dict[int, int] = {}
        self.at_head = self._check_heads()

    def _check_heads(self) -> bool:
        done = self.done
        return all(done.get(p, -1) >= head for p, head in self.heads.items())

    def process(self, envelope: Any, collector: Any, coordinator: Any) -> None:
        ssp = envelope.ssp
        message = envelope.message
        if ssp.stream == CODES:
            self.store.put(message["code"], message["symbol"])
            self.done[ssp.partition] = int(envelope.offset)
            if not self.at_head:
                self.at_head = self._check_heads()
            return
        currency = message["country"]
        symbol = self.store.get(currency)
        out = {
            "txn_id": message.get("txn_id"),
            "currency": currency,
            "amount": f"{symbol}{message['amount']}" if symbol is not None else None,
            "symbol": symbol,
            "codes_at_head": self.at_head,
        }
        collector.send(OutgoingMessageEnvelope(self.output, out, key=currency))
