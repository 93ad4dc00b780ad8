"""Prices per million tokens, by model, from the sweep's `[llm.pricing]` table; cost of a call."""

from __future__ import annotations

import msgspec

from staminad.gateway.usage import Usage


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """US dollars per million tokens."""

    input: float
    output: float
    cached_input: float | None = None  # defaults to `input` when the provider gives no cache discount


def cost(usage: Usage, price: Price | None) -> float:
    """Dollars for a call; 0.0 for a model without a price (its tokens are still counted)."""
    if price is None:
        return 0.0
    cached_rate = price.input if price.cached_input is None else price.cached_input
    fresh = max(usage.input - usage.cached, 0)
    return (fresh * price.input + usage.cached * cached_rate + usage.output * price.output) / 1_000_000


def price_for(table: dict[str, Price], model: str) -> Price | None:
    """The price of `model`; a provider prefix (`openai/gpt-x`) or a dated suffix falls back to the longest match."""
    if model in table:
        return table[model]
    bare = model.split("/", 1)[-1]
    if bare in table:
        return table[bare]
    matches = [name for name in table if bare.startswith(name)]
    return table[max(matches, key=len)] if matches else None
