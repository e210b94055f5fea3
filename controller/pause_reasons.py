"""Why a table is paused, in the words a dealer and a supervisor use, and what the pause waits for.

A pause is recorded with a cause (`controller.events.PauseCause`), who paused it, the device it concerns and
a reason. The reason of a device pause is driver text ("shoe offline: lost connection to …: device reports
readiness to read but returned no data …"): exact, but not what a person at the table needs to read first.
`explain_pause` turns the pause record and the table's current device health (both as the table publishes
them in its state) into:

- a short headline naming what happened and what fixes it ("Shoe disconnected — check its cable");
- what the pause still waits for ("the shoe to be back online"), or nothing when a supervisor's resume
  would be accepted now (the table refuses to resume while a device is not online: `controller.runtime`);
- what the dealer does now, and what the supervisor does now;
- the technical detail, once, for the detail view.

Pure and shared: the dealer panel and the studio console both call it on the same published data, so the two
screens never word one pause two ways. The codes it knows are the devices' documented ones (docs/devices.md);
an unknown code is still shown, as "reports fault <code>", never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

#: how a device pause's reason is written (`controller.runtime`): "<device> offline: <detail>" or
#: "<device> fault: <detail>". Written and read here only, so the two cannot drift apart.
_DEVICE_STATUSES = ("offline", "fault")


def device_pause_reason(device: str, status: str, detail: str) -> str:
    """The reason a device's fault or loss pauses the table with (published in `round.paused`)."""
    return f"{device} {'fault' if status == 'fault' else 'offline'}: {detail}"


def _split_device_reason(device: str, reason: str) -> tuple[str | None, str]:
    """(status, detail) of a reason written by `device_pause_reason`; (None, reason) for any other text."""
    for status in _DEVICE_STATUSES:
        prefix = f"{device} {status}: "
        if reason.startswith(prefix):
            return status, reason[len(prefix) :]
    return None, reason


def short_reason(reason: str, device: str | None) -> str:
    """A pause's reason without the driver's text: "shoe offline" for "shoe offline: lost connection to …"
    (the text is shown once, as the pause's technical detail); any other reason as it is."""
    if device:
        status, _ = _split_device_reason(device, reason)
        if status is not None:
            return f"{device} {status}"
    return reason


#: a device fault's documented code (or fault state) -> (what happened, what fixes it)
FAULT_WORDS: dict[str, tuple[str, str]] = {
    # card shoe
    "F01": ("reader is dirty", "clean the reader window"),
    "F02": ("sensor fault", "call a technician"),
    "F03": ("jammed", "clear the jam"),
    "COVER_OPEN": ("cover is open", "close the cover"),
    # shuffler
    "COUNT_MISMATCH": ("counted the wrong number of cards", "recount the deck before it is used"),
    "DOOR_OPEN": ("door is open", "close the door"),
    "E03": ("door is open", "close the door"),
    # dice shaker
    "M01": ("motor fault", "call a technician"),
    "M02": ("dome is not closed", "close the dome"),
    "M03": ("vibration sensor fault", "call a technician"),
    "M04": ("light fault", "check the dome's light"),
    # roulette wheel
    "LAUNCH_FAILED": ("could not launch the ball", "check the ball and the launcher"),
    "SENSOR_OR_MOTOR": ("sensor or motor fault", "call a technician"),
    "POWERED_DOWN": ("is powered down", "check its power"),
    "RESULT_MISMATCH": ("reported two different numbers", "check where the ball lies"),
    "RESULT_UNCONFIRMED": ("did not confirm the number", "check where the ball lies"),
    "RESULT_MISSED": ("missed the result", "check where the ball lies"),
    # dice camera
    "FROZEN": ("picture is frozen", "check the camera's cable"),
    "BLACK": ("picture is black", "check the dome's light and the lens"),
    "COVERED": ("lens is covered", "uncover the lens"),
}

#: what a dealer does while the supervisor decides (every pause is the supervisor's to lift)
WAIT_FOR_SUPERVISOR = "Do not deal — wait for the supervisor"
#: the sender on record of a dealer's command from the panel (`controller.panel.app.IDENTITY_PREFIX`)
DEALER_SENDER_PREFIX = "dealer:"


@dataclass(frozen=True, slots=True)
class PauseExplanation:
    #: a stable code of the kind of pause: device_offline, device_fault, device_back, supervisor, dealer,
    #: restart, out_of_procedure, game, internal_error
    code: str
    #: short, for a tile or a banner: what happened and what fixes it
    headline: str
    #: what the pause still waits for before the table would accept a resume ("the shoe to be back
    #: online"); None when a resume would be accepted now
    waits_for: str | None
    #: what the dealer does now
    dealer_action: str
    #: what the supervisor does now
    supervisor_action: str
    #: the technical detail (driver text), for the detail view
    detail: str
    #: the device the pause concerns, if any
    device: str | None

    @property
    def ready_to_resume(self) -> bool:
        return self.waits_for is None

    def public(self) -> dict[str, Any]:
        return {**asdict(self), "ready_to_resume": self.ready_to_resume}


def device_label(name: str) -> str:
    """A configured device name as a person says it: 'shoe' -> 'Shoe', 'dice_camera' -> 'Dice camera'."""
    words = name.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else "Device"


def _unhealthy(devices: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [name for name, health in devices.items() if health.get("status") != "online"]


def _device_trouble(name: str, health: Mapping[str, Any]) -> tuple[str, str, str]:
    """(code, headline, what the dealer does) for a device that is not online now."""
    label = device_label(name)
    status = health.get("status")
    if status == "fault":
        code = str(health.get("code") or "")
        what, fix = FAULT_WORDS.get(
            code, (f"reports fault {code}" if code else "reports a fault", "call a technician")
        )
        return "device_fault", f"{label} {what} — {fix}", fix[:1].upper() + fix[1:]
    detail = str(health.get("detail") or "")
    if detail.startswith("no data from device"):
        return (
            "device_offline",
            f"{label} stopped answering — check its power and cable",
            "Check its power and cable",
        )
    if detail == "not connected yet":
        return "device_offline", f"{label} not connected yet — check its cable", "Check its cable"
    return "device_offline", f"{label} disconnected — check its cable", "Check its cable"


def explain_pause(
    pause: Mapping[str, Any] | None, devices: Mapping[str, Mapping[str, Any]] | None = None
) -> PauseExplanation | None:
    """The explanation of a table's pause (None when it is not paused).

    `pause` is the state's pause record (`reason`, `by`, `device`, `cause`); `devices` the state's device
    health by name (`status`, `detail`, `code`), as the table publishes them now.
    """
    if not pause:
        return None
    devices = devices or {}
    reason = str(pause.get("reason") or "")
    cause = str(pause.get("cause") or "")
    by = str(pause.get("by") or "")
    device = pause.get("device")
    device = str(device) if device else None
    # the panel pauses in the signed-in dealer's name (`dealer:<id>`); "panel" is its older sender
    by_dealer = by == "panel" or by.startswith(DEALER_SENDER_PREFIX)

    down = _unhealthy(devices)
    waits_for: str | None = None
    if down:
        names = ", ".join(f"the {device_label(n).lower()}" for n in down)
        waits_for = f"{names} to be back online"

    if cause == "device" and device is not None:
        _, detail = _split_device_reason(device, reason)
        if device in down:
            code, headline, dealer = _device_trouble(device, devices[device])
            return PauseExplanation(
                code=code,
                headline=headline,
                waits_for=waits_for,
                dealer_action=f"{dealer}, then wait for the supervisor",
                supervisor_action="Resume once it is back online, or void the round",
                detail=detail,
                device=device,
            )
        label = device_label(device)
        return PauseExplanation(
            code="device_back",
            headline=f"{label} was interrupted and is back — the supervisor decides",
            waits_for=waits_for,
            dealer_action=WAIT_FOR_SUPERVISOR,
            supervisor_action="Resume the round, or void it",
            detail=detail,
            device=device,
        )
    if cause == "out_of_procedure":
        headline = "A card came out of procedure — the supervisor decides"
        action = "Resume to set the card aside and go on, or void the round"
    elif cause == "supervisor":
        headline = f"Paused by the supervisor ({by})" if by and not by_dealer else "Paused by the supervisor"
        action = "Resume when the table is ready"
        if by_dealer:
            headline = "The dealer called the supervisor"
            action = "Go to the table; resume or void the round"
    elif cause == "restart":
        headline = "The controller restarted mid-round — the supervisor decides"
        action = "Check the felt, then resume or void the round"
    elif cause == "internal_error":
        headline = "Internal error — the round is held safe"
        action = "Void the round, and report the error"
    else:  # "game", or a cause a newer table sends
        headline = reason[:1].upper() + reason[1:] if reason else "Paused"
        action = "Resume or void the round"
    code = {"supervisor": "dealer" if by_dealer else "supervisor"}.get(cause, cause or "game")
    return PauseExplanation(
        code=code,
        headline=headline,
        waits_for=waits_for,
        dealer_action=WAIT_FOR_SUPERVISOR,
        supervisor_action=action,
        detail=reason,
        device=device,
    )
