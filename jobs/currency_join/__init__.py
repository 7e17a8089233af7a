"""currency_join: a use case of Samza's MessageChooser design (SAMZA-2).

``currency_codes`` (bootstrap, 4 partitions, keyed by code: USD → $) is read to its head before
any ``transactions`` message ({"country": "USD", "amount": 1234}, keyed by currency); the task
keeps the symbols in a RocksDB store with a changelog and emits {"amount": "$1234"}. Every
output message says whether the task had seen ``currency_codes`` reach its head — the evidence
the demo counts ("0 transactions processed before currency_codes reached head").
"""
