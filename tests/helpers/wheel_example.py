"""The wheel vendor's example game (operating mode 1024), line by line: one spin that ends on 25. Shared by
the SS2 protocol tests and the roulette replay tests; `tests/unit/drivers/test_wheel_session.py` plays the
same lines at the times the wheel sends them."""

from __future__ import annotations

VENDOR_EXAMPLE = [
    "*X;1;011;23;0;154;0",
    "*X;2;011;23;0;154;0",
    "*X;2;011;23;0;086;0",
    "*X;3;011;23;0;170;1",
    "*X;4;011;23;0;168;1",
    "*X;4;011;23;0;165;1",
    "25",
    "*X;5;011;25;0;165;1",
    "*X;5;011;25;0;165;1",
    "*X;1;011;25;0;165;1",
]
