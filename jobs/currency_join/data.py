"""Seeded sample data: currency symbols and transactions keyed by currency."""

from __future__ import annotations

import random
from collections.abc import Iterator

#: (code, symbol) — the currency_codes stream's content
CURRENCIES: tuple[tuple[str, str], ...] = (
    ("USD", "$"),
    ("EUR", "€"),
    ("GBP", "£"),
    ("JPY", "¥"),
    ("INR", "₹"),
    ("BRL", "R$"),
    ("CHF", "CHF "),
    ("CAD", "C$"),
    ("AUD", "A$"),
    ("CNY", "CN¥"),
    ("KRW", "₩"),
    ("MXN", "MX$"),
    ("SEK", "kr "),
    ("NOK", "kr "),
    ("DKK", "kr. "),
    ("PLN", "zł "),
    ("TRY", "₺"),
    ("ZAR", "R "),
    ("SGD", "S$"),
    ("HKD", "HK$"),
    ("NZD", "NZ$"),
    ("ILS", "₪"),
    ("THB", "฿"),
    ("PHP", "₱"),
    ("VND", "₫"),
    ("UAH", "₴"),
    ("NGN", "₦"),
    ("EGP", "E£"),
    ("CZK", "Kč "),
    ("HUF", "Ft "),
)
#: a currency that only appears after the restart (its code arrives with its first transactions)
LATE_CURRENCY = ("ISK", "kr. ")


def transactions(
    count: int, *, seed: int = 11, start_id: int = 0, currencies: tuple[tuple[str, str], ...] = CURRENCIES
) -> Iterator[dict]:
    """``count`` transactions, currencies skewed towards the first ones (as real traffic is)."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(currencies))]
    codes = [c for c, _ in currencies]
    for i in range(count):
        yield {"txn_id": start_id + i, "country": rng.choices(codes, weights)[0], "amount": rng.randrange(1, 5000)}
