"""A client's card response at the gateway's edge: uagents-core's own model decides what is one,
sizes are capped, and a reply's session is read from its log."""

from __future__ import annotations

import uuid

import pytest

from agent_stream.gateway.answers import (
    MAX_CARD_RESPONSE_BYTES,
    SESSION,
    card_response_of,
    session_of,
)
from agent_stream.gateway.middleware import HTTPError


def test_a_card_response_is_read_with_uagents_cores_model() -> None:
    card_id = str(uuid.uuid4())
    r = card_response_of({"card_id": card_id, "selection": {"decision": "approve", "n": 2}})
    assert (
        r is not None
        and str(r.card_id) == card_id
        and r.selection == {"decision": "approve", "n": 2}
    )
    assert card_response_of(None) is None
    assert card_response_of({"cancelled": True}) is not None


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("approve", 400),  # not an object
        ({"selection": {"a": 1}, "extra": 1}, 400),  # uagents-core forbids unknown keys
        ({"card_id": "not-a-uuid", "selection": {"a": 1}}, 400),
        ({"card_id": str(uuid.uuid1()), "selection": {"a": 1}}, 400),  # a UUID4 only
        ({"selection": {"a": {"nested": 1}}}, 400),
        ({}, 400),  # says nothing
        ({"selection": {f"k{i}": i for i in range(65)}}, 400),
        ({"text": "x" * (MAX_CARD_RESPONSE_BYTES + 1)}, 413),
    ],
)
def test_what_is_not_a_card_response_is_refused_with_a_clear_error(
    raw: object, status: int
) -> None:
    with pytest.raises(HTTPError) as err:
        card_response_of(raw)
    assert err.value.status == status


def test_a_replys_session_is_read_from_its_log() -> None:
    s = uuid.uuid4()
    assert session_of({SESSION: str(s)}) == s
    with pytest.raises(HTTPError) as err:
        session_of({})
    assert err.value.status == 409
