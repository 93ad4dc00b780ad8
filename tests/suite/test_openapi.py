"""The OpenAPI export is a valid OpenAPI 3.1 document that lists every endpoint of the state."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from staminad.bench.openapi import openapi
from staminad.bench.scenario import ScenarioParams, generate


@pytest.mark.parametrize("turn", [0, 20, 60])
def test_openapi_document_is_valid_and_complete(turn: int) -> None:
    """Every entity, analytics and action path appears, and the document validates as OpenAPI 3.1."""
    state = generate(2, ScenarioParams(turns=60)).state_at(turn)
    doc = openapi(state)
    validate(doc)
    for e in state.entities:
        assert f"/{e.endpoint}" in doc["paths"] and f"/{e.endpoint}/{{id}}" in doc["paths"]
    assert all(a.path() in doc["paths"] for a in state.analytics)
    assert all(f"/{a.entity.lower()}/{{id}}/{a.name}" in doc["paths"] for a in state.actions)
