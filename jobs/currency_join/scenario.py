"""currency_join end to end: generate, run (twice — the second run is a restart), check.

Run 1: ``currency_codes`` holds every symbol, ``transactions`` the first 80 % of the traffic.
Run 2 (a restart of the same job, from its checkpoints): a new currency's code is appended to
``currency_codes`` together with the rest of the transactions, some of them in the new currency.
The output must join every transaction with its symbol, and no transaction may have been
processed before ``currency_codes`` reached its head — in either run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobs.currency_join.data import CURRENCIES, LATE_CURRENCY, transactions
from jobs.demo.runner import run_job
from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.config import Config

CONFIG_PATH = Path(__file__).with_name("currency_join.properties")
CODES, TRANSACTIONS, OUTPUT = "currency_codes", "transactions", "transactions_with_symbol"
PARTITIONS = 4


@dataclass
class CurrencyJoinReport:
    currency_codes: int
    transactions: int
    outputs: int
    joined: int
    missing_symbol: int
    #: transactions processed before currency_codes reached head (SAMZA-2's promise: 0)
    processed_before_head: int
    #: the same two numbers for the restarted run alone
    restart_transactions: int
    restart_before_head: int
    late_currency_joined: int
    wrong_amount: int
    messages_processed: int
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_config(log_root: Path | str, **overrides: str) -> Config:
    config = Config.from_properties(CONFIG_PATH)
    return config.with_overrides({"systems.log.log.path": str(log_root), **overrides})


def _codes(entries: tuple[tuple[str, str], ...]) -> list[tuple[bytes, bytes, None]]:
    return [(c.encode(), json.dumps({"code": c, "symbol": s}).encode(), None) for c, s in entries]


def _txns(items: list[dict]) -> list[tuple[bytes, bytes, None]]:
    return [(t["country"].encode(), json.dumps(t).encode(), None) for t in items]


def run_scenario(
    log_root: Path | str,
    *,
    size: int = 2000,
    runner: str = "thread",
    spark: Any = None,
    seed: int = 11,
    **overrides: str,
) -> CurrencyJoinReport:
    config = load_config(log_root, **overrides)
    create_streams(config, {CODES: PARTITIONS, TRANSACTIONS: PARTITIONS, OUTPUT: PARTITIONS})
    first = int(size * 0.8)
    txns1 = list(transactions(first, seed=seed))
    txns2 = list(transactions(size - first, seed=seed + 1, start_id=first, currencies=(*CURRENCIES[:5], LATE_CURRENCY)))
    # transactions first: a job that did not bootstrap would meet them before their symbols
    produce(config, TRANSACTIONS, _txns(txns1))
    produce(config, CODES, _codes(CURRENCIES))
    out1 = run_job(config, runner=runner, spark=spark)

    produce(config, TRANSACTIONS, _txns(txns2))
    produce(config, CODES, _codes((LATE_CURRENCY,)))
    out2 = run_job(config, runner=runner, spark=spark)

    symbols = dict((*CURRENCIES, LATE_CURRENCY))
    expected = {t["txn_id"]: t for t in (*txns1, *txns2)}
    records = read_stream(config, OUTPUT)
    outputs = [json.loads(r.value) for r in records]
    restart_ids = {t["txn_id"] for t in txns2}
    restarted = [o for o in outputs if o["txn_id"] in restart_ids]
    wrong = sum(1 for o in outputs if o["amount"] != f"{symbols[o['currency']]}{expected[o['txn_id']]['amount']}")
    return CurrencyJoinReport(
        currency_codes=len(CURRENCIES) + 1,
        transactions=len(expected),
        outputs=len(outputs),
        joined=sum(1 for o in outputs if o["symbol"] is not None),
        missing_symbol=sum(1 for o in outputs if o["symbol"] is None),
        processed_before_head=sum(1 for o in outputs if not o["codes_at_head"]),
        restart_transactions=len(restarted),
        restart_before_head=sum(1 for o in restarted if not o["codes_at_head"]),
        late_currency_joined=sum(1 for o in restarted if o["currency"] == LATE_CURRENCY[0] and o["symbol"]),
        wrong_amount=wrong,
        messages_processed=out1.messages_processed + out2.messages_processed,
        elapsed_s=out1.elapsed_s + out2.elapsed_s,
    )
