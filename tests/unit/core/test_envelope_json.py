"""The journal encodes each envelope once, without validating it again (`controller.events.envelope_json`):
the text is the one the `Envelope` model gives, byte for byte, whatever the event's data holds; its times
(`iso_ms`) are the datetime module's text and its ids random UUID4s, each made without the object."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import journal as journal_module
from controller.events import Envelope, envelope_json, iso_ms, trusted_envelope

pytestmark = pytest.mark.unit

#: what an event's data can hold once its model dumped it in JSON mode
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def fields(data: dict[str, Any], subject: str | None, text: str) -> dict[str, Any]:
    return {
        "id": "0f" * 16,
        "source": "studio/s1/table/t1",
        "type": "card.dealt",
        "time": "2026-12-06T00:00:00.123Z",
        "recordedtime": "2026-12-06T00:00:00.125Z",
        "sequence": "000000000042",
        "subject": subject,
        "historical": False,
        "data": {"raw": text, **data},
    }


@settings(max_examples=300, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=6),
    subject=st.none() | st.text(max_size=20),
    text=st.text(max_size=30),
)
def test_the_envelope_text_is_the_models_byte_for_byte(
    data: dict[str, Any], subject: str | None, text: str
) -> None:
    envelope = fields(data, subject, text)
    assert envelope_json(envelope) == Envelope(**envelope).model_dump_json()


def test_the_envelope_returned_is_the_validated_models_equal() -> None:
    envelope = fields(
        {"card": "TD", "index": 0, "rescan": False, "note": "é — \u2028"}, "bac-000001", "CARD 1 TD"
    )
    trusted = trusted_envelope(envelope)
    validated = Envelope(**envelope)
    assert trusted == validated
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.model_dump_json() == validated.model_dump_json() == envelope_json(envelope)
    assert trusted.model_fields_set == validated.model_fields_set


def reference_iso_ms(epoch_seconds: float) -> str:
    """What `iso_ms` says, as the datetime module says it."""
    return (
        datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


@settings(max_examples=2000, deadline=None)
@given(
    st.floats(min_value=0, max_value=253_402_300_799.0)
    | st.builds(
        lambda second, edge: second + edge,
        st.integers(min_value=0, max_value=4_000_000_000),
        st.sampled_from(
            [0.0, 0.0005, 0.0004999, 0.0009995, 0.0000005, 0.9994995, 0.9995, 0.9999995, 0.9999999]
        ),
    )
)
def test_iso_ms_is_the_datetime_text(epoch_seconds: float) -> None:
    assert iso_ms(epoch_seconds) == reference_iso_ms(epoch_seconds)


def test_iso_ms_outside_the_fast_range_is_the_datetime_text_too() -> None:
    for epoch_seconds in (-0.0005, -1.5, -86_400.25):
        assert iso_ms(epoch_seconds) == reference_iso_ms(epoch_seconds)


def test_an_event_id_is_a_random_uuid4s_hex(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw in (bytes(16), b"\xff" * 16, bytes(range(16)), bytes(range(100, 116))):
        monkeypatch.setattr(journal_module.os, "urandom", lambda n, raw=raw: raw)
        assert journal_module._event_id() == uuid.UUID(bytes=raw, version=4).hex
    monkeypatch.undo()
    ids = {journal_module._event_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(uuid.UUID(hex=value).version == 4 for value in ids)
