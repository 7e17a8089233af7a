"""Wording shared by the commands' output."""


def count_of(n: int, noun: str) -> str:
    """``"1 partition"``, ``"4 partitions"``, ``"1,000 messages"``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
