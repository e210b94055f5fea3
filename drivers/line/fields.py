"""Fields of line-device messages: sequence numbers, ids, counts. Pure: text in, values (or None) out.

Parsers return None for a field that is not what it must be (the caller decides which failure that is);
`check_*` refuse, with a ValueError, to encode a value the wire cannot carry.
"""

from __future__ import annotations

#: Sequence numbers are four digits and wrap from 9999 to 0000.
SEQ_MODULO = 10_000

#: Ids on the wire (a shuffle id, a shake cycle id) are one short token; longer is a garbled line, not an id.
MAX_TOKEN_LENGTH = 32


def is_token(text: str) -> bool:
    """An id on the wire: one field of printable ASCII without space or `*`, at most MAX_TOKEN_LENGTH long."""
    return (
        0 < len(text) <= MAX_TOKEN_LENGTH
        and text.isascii()
        and text.isprintable()
        and " " not in text
        and "*" not in text
    )


def check_token(value: str, what: str) -> None:
    """Refuse to encode an id that would not survive the wire as one field."""
    if not is_token(value):
        raise ValueError(
            f"{what} must be one token (printable ASCII, no space or '*', at most "
            f"{MAX_TOKEN_LENGTH} characters): {value!r}"
        )


def check_count(value: int, what: str, maximum: int) -> None:
    """Refuse to encode a count outside 1..maximum (what its field's digits can carry)."""
    if not 1 <= value <= maximum:
        raise ValueError(f"{what} must be 1..{maximum}, not {value}")


def parse_number(field: str, max_digits: int) -> int | None:
    """A field of 1 to `max_digits` decimal digits, or None if the field is not one."""
    if 0 < len(field) <= max_digits and field.isascii() and field.isdigit():
        return int(field)
    return None


def seq_text(seq: int) -> str:
    return f"{seq:04d}"


def parse_seq(field: str) -> int | None:
    """A four-digit sequence number, or None if the field is not one."""
    if len(field) == 4 and field.isascii() and field.isdigit():
        return int(field)
    return None


def parse_seq_only(args: list[str]) -> int | None:
    """The seq of a message whose only field is its seq (`NOREAD <seq>`), or None."""
    return parse_seq(args[0]) if len(args) == 1 else None


def parse_seq_code_text(args: list[str]) -> tuple[int, str, str] | None:
    """`<seq> <code> <text...>` (`ERR 0007 E01 JAM`, `FAULT 0012 M02 DOME_NOT_CLOSED`): the text is every
    field after the code, at least one."""
    seq = parse_seq(args[0]) if len(args) >= 3 else None
    if seq is None:
        return None
    return seq, args[1], " ".join(args[2:])


def parse_id_and_count(args: list[str], digits: int) -> tuple[str, int] | None:
    """`<id> <count>` (`SHUFFLE S-1 8`, `SHAKE C-7 3`): one token and 1 to `digits` digits, not zero."""
    count = parse_number(args[1], digits) if len(args) == 2 else None
    if count is None or count == 0 or not is_token(args[0]):
        return None
    return args[0], count


def split_fields(body: str) -> list[str] | None:
    """Fields separated by single spaces; None if any field is empty (double/leading/trailing space)."""
    fields = body.split(" ")
    if any(not field for field in fields):
        return None
    return fields
