"""A dealer's PIN as the table's config holds it: the hash `tablectl panel-hash-pin` makes for
`[panel.dealers]`, and the dealer ids it is kept under. A leaf: the config checks a file's hashes with it, the
panel (`controller.panel.auth`) checks a PIN against them, neither through the other.

A PIN hash is `scrypt$<log2 n>$<r>$<p>$<salt, base64>$<hash, base64>`. The PIN itself is never stored, logged
or sent anywhere but in the sign-in request.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

#: scrypt cost: 2**14 x 8 x 1 takes about 50 ms and 16 MiB per check on a table PC, which makes guessing
#: a PIN from a stolen config slow, while a sign-in still feels instant
SCRYPT_LOG2_N = 14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_MAXMEM = 64 * 1024 * 1024
HASH_BYTES = 32
SALT_BYTES = 16
PIN_PATTERN = re.compile(r"^[0-9]{4,12}$")
DEALER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_HASH_PATTERN = re.compile(r"^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(pin: str, salt: bytes, log2_n: int, r: int, p: int, length: int) -> bytes:
    return hashlib.scrypt(
        pin.encode("utf-8"), salt=salt, n=2**log2_n, r=r, p=p, maxmem=SCRYPT_MAXMEM, dklen=length
    )


def hash_pin(pin: str, *, salt: bytes | None = None, log2_n: int = SCRYPT_LOG2_N) -> str:
    """The hash to put in `[panel.dealers]` for this PIN (4 to 12 digits)."""
    if not PIN_PATTERN.match(pin):
        raise ValueError("a PIN is 4 to 12 digits")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = _scrypt(pin, salt, log2_n, SCRYPT_R, SCRYPT_P, HASH_BYTES)
    return f"scrypt${log2_n}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


@dataclass(frozen=True)
class PinHash:
    log2_n: int
    r: int
    p: int
    salt: bytes
    digest: bytes

    @classmethod
    def parse(cls, text: str) -> PinHash:
        """Raises ValueError (worded for the config file) if `text` is not a hash from panel-hash-pin."""
        match = _HASH_PATTERN.match(text)
        if match is None:
            raise ValueError("not a PIN hash: make one with `tablectl panel-hash-pin`")
        log2_n, r, p = (int(match.group(i)) for i in (1, 2, 3))
        try:
            salt, digest = (base64.b64decode(match.group(i), validate=True) for i in (4, 5))
        except binascii.Error:
            raise ValueError("not a PIN hash (bad base64): make one with `tablectl panel-hash-pin`") from None
        if not (10 <= log2_n <= 20 and 1 <= r <= 32 and 1 <= p <= 16 and len(salt) >= 8 and digest):
            raise ValueError("PIN hash parameters out of range: make one with `tablectl panel-hash-pin`")
        return cls(log2_n, r, p, salt, digest)

    def matches(self, pin: str) -> bool:
        candidate = _scrypt(pin, self.salt, self.log2_n, self.r, self.p, len(self.digest))
        return hmac.compare_digest(candidate, self.digest)
