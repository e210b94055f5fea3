"""The journal encodes each envelope once, without validating it again (`controller.events.envelope_json`):
the text is the one the `Envelope` model gives, byte for byte, whatever the event's data holds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.events import Envelope, envelope_json, trusted_envelope

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
