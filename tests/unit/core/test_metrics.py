"""`/metrics`, its pure parts: pauses and voids are counted by cause, never by free text; metrics are off
by default; on another address any host is answered unless `allowed_hosts` names them.

Its unit tests; the integration ones are in `tests/integration/test_metrics.py`, the e2e ones in
`tests/e2e/test_metrics.py`."""

from __future__ import annotations

import pytest

from controller.config import MetricsSettings
from controller.metrics import allowed_hosts, pause_cause, void_cause

pytestmark = pytest.mark.unit


def test_pauses_and_voids_are_counted_by_cause_not_by_free_text() -> None:
    assert pause_cause({"by": "device", "device": "shoe", "reason": "shoe fault: jam (E3)"}) == "device_fault"
    assert (
        pause_cause({"by": "device", "device": "shoe", "reason": "shoe offline: link lost"})
        == "device_offline"
    )
    assert pause_cause({"by": "system", "reason": "controller restarted mid-round"}) == "restart"
    assert pause_cause({"by": "system", "reason": "internal error in the game flow"}) == "flow_error"
    assert pause_cause({"by": "dealer:d7", "reason": "called the supervisor"}) == "dealer"
    assert pause_cause({"by": "supervisor-desk-2", "reason": "anything at all"}) == "supervisor"
    assert void_cause({"by": "system", "reason": "shoe offline: link lost before the round started"}) == (
        "fault_before_start"
    )
    assert void_cause({"by": "device", "reason": "miss-spin"}) == "device"
    assert void_cause({"by": "supervisor-desk-1", "reason": "misdeal"}) == "supervisor"


def test_metrics_are_off_by_default() -> None:
    assert MetricsSettings().enabled is False


def test_on_another_address_any_host_is_answered_unless_allowed_hosts_names_them() -> None:
    assert allowed_hosts(MetricsSettings(host="0.0.0.0", port=9464)) is None
    named = MetricsSettings(host="0.0.0.0", port=9464, allowed_hosts=["table-7.studio"])
    assert allowed_hosts(named) == {"table-7.studio:9464"}
    assert allowed_hosts(MetricsSettings(host="127.0.0.1", port=9464)) == {
        "127.0.0.1:9464",
        "localhost:9464",
        "[::1]:9464",
    }
