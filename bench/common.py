"""What every benchmark shares: percentiles and the table it prints."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def print_table(title: str, rows: list[tuple[str, str, str]], value_header: str = "value") -> None:
    print(f"\n## {title}\n")
    print(f"| measure | {value_header} | note |\n|---|---|---|")
    for name, value, note in rows:
        print(f"| {name} | {value} | {note} |")


def print_grid(title: str, headers: list[str], rows: list[list[str]]) -> None:
    """A table with any columns, one row per measured case."""
    print(f"\n## {title}\n")
    print("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(row) + " |")
