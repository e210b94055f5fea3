"""Wheel bias check: the chi-square maths against known values, the verdicts, and the command line.

Its unit tests; the integration ones are in `tests/integration/test_wheel_bias.py`."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.bias_cli import UnreadableInput, main, read_numbers, register
from calibration.wheel_bias import (
    EUROPEAN_WHEEL_ORDER,
    check_bias,
    chi_square_sf,
    regularized_upper_gamma,
    wheel_sectors,
)
from tests.helpers.wheel_bias import sector_weighted_spins, uniform_spins, write_lines

pytestmark = pytest.mark.unit

# --- chi-square survival function -------------------------------------------------------------------------

# (statistic, degrees of freedom, upper-tail probability) from printed chi-square tables.
TABLE_VALUES = [
    (36.0, 36, 0.468),  # the median of chi-square(36) is about 35.3
    (3.841, 1, 0.05),
    (6.635, 1, 0.01),
    (5.991, 2, 0.05),
    (9.210, 2, 0.01),
    (14.067, 7, 0.05),
    (18.475, 7, 0.01),
    (18.307, 10, 0.05),
    (50.998, 36, 0.05),
    (58.619, 36, 0.01),
    (124.342, 100, 0.05),
    (2.706, 1, 0.10),
    (0.455, 1, 0.50),
]


@pytest.mark.parametrize(("statistic", "dof", "p"), TABLE_VALUES)
def test_chi_square_sf_matches_table_values(statistic: float, dof: int, p: float) -> None:
    assert chi_square_sf(statistic, dof) == pytest.approx(p, abs=1e-3)


def test_chi_square_sf_edges() -> None:
    assert chi_square_sf(0.0, 36) == 1.0
    assert chi_square_sf(-1.0, 5) == 1.0
    assert chi_square_sf(10_000.0, 36) < 1e-300 or chi_square_sf(10_000.0, 36) == 0.0
    with pytest.raises(ValueError):
        chi_square_sf(1.0, 0)
    with pytest.raises(ValueError):
        regularized_upper_gamma(0.0, 1.0)
    with pytest.raises(ValueError):
        regularized_upper_gamma(1.0, -1.0)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-6, max_value=400.0))
def test_chi_square_sf_matches_closed_forms(x: float) -> None:
    # df = 1: erfc(sqrt(x/2)); df = 2: exp(-x/2); df = 3: erfc(sqrt(x/2)) + sqrt(2x/pi) exp(-x/2);
    # df = 4: exp(-x/2) (1 + x/2). Independent of the series / continued fraction used in the module.
    half = x / 2
    assert chi_square_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(half)), rel=1e-9, abs=1e-300)
    assert chi_square_sf(x, 2) == pytest.approx(math.exp(-half), rel=1e-9, abs=1e-300)
    df3 = math.erfc(math.sqrt(half)) + math.sqrt(2 * x / math.pi) * math.exp(-half)
    assert chi_square_sf(x, 3) == pytest.approx(df3, rel=1e-9, abs=1e-300)
    assert chi_square_sf(x, 4) == pytest.approx(math.exp(-half) * (1 + half), rel=1e-9, abs=1e-300)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=60), st.floats(min_value=0.01, max_value=150.0))
def test_upper_gamma_of_integer_shape_is_a_poisson_tail(k: int, x: float) -> None:
    # Q(k, x) = e^-x * sum_{i<k} x^i / i!  (the chance of fewer than k Poisson(x) events)
    poisson = sum(math.exp(-x + i * math.log(x) - math.lgamma(i + 1)) for i in range(k))
    assert regularized_upper_gamma(k, x) == pytest.approx(poisson, rel=1e-9, abs=1e-300)


def test_upper_gamma_is_continuous_where_the_method_switches() -> None:
    for a in (0.5, 3.0, 18.0):
        below = regularized_upper_gamma(a, a + 1 - 1e-9)
        above = regularized_upper_gamma(a, a + 1)
        assert below == pytest.approx(above, abs=1e-8)


# --- sectors ----------------------------------------------------------------------------------------------


def test_wheel_order_holds_every_pocket_once() -> None:
    assert sorted(EUROPEAN_WHEEL_ORDER) == list(range(37))
    assert EUROPEAN_WHEEL_ORDER[:5] == (0, 32, 15, 19, 4)


def test_sectors_are_contiguous_and_near_equal() -> None:
    sectors = wheel_sectors(8)
    assert [len(sector) for sector in sectors] == [5, 5, 5, 5, 5, 4, 4, 4]
    assert sectors[0] == (0, 32, 15, 19, 4)
    assert sectors[-1] == (12, 35, 3, 26)
    assert tuple(pocket for sector in sectors for pocket in sector) == EUROPEAN_WHEEL_ORDER
    for count in range(2, 38):
        sizes = [len(sector) for sector in wheel_sectors(count)]
        assert sum(sizes) == 37 and len(sizes) == count and max(sizes) - min(sizes) <= 1
    for bad in (0, 1, 38):
        with pytest.raises(ValueError):
            wheel_sectors(bad)


def test_a_fair_wheel_is_not_flagged() -> None:
    report = check_bias(uniform_spins(10_000, seed=20240611))
    assert report.spins == 10_000
    assert not report.numbers.biased and not report.sectors.biased and not report.biased
    assert report.numbers.degrees_of_freedom == 36 and report.sectors.degrees_of_freedom == 7
    assert report.numbers.p_value > 0.01 and report.sectors.p_value > 0.01
    assert report.warnings == ()
    assert report.render().endswith("Verdict: no bias flagged")


def test_a_sector_thirty_percent_over_weighted_is_flagged_and_named() -> None:
    favoured = wheel_sectors(8)[2]  # 6-27-13-36-11
    report = check_bias(sector_weighted_spins(10_000, seed=7, sector=favoured, weight=1.3))
    assert report.sectors.biased and report.biased
    assert report.sectors.p_value < 1e-6
    worst = report.sectors.most_over_represented()[0]
    assert worst.label == "sector 3 (6-27-13-36-11)"
    assert report.numbers.biased
    assert {int(cell.label) for cell in report.numbers.most_over_represented(5)} == set(favoured)
    assert "BIAS FLAGGED" in report.render()


def test_sector_test_sees_a_regional_bias_the_number_test_misses() -> None:
    # 4,000 spins with a 25% heavier sector: pooling neighbours makes the sector test the more sensitive one.
    favoured = wheel_sectors(8)[4]
    report = check_bias(sector_weighted_spins(4_000, seed=3, sector=favoured, weight=1.25))
    assert report.sectors.biased and not report.numbers.biased
    assert report.sectors.most_over_represented()[0].label == "sector 5 (24-16-33-1-20)"


def test_statistic_and_expected_counts_are_exact() -> None:
    # 0 comes up 4 times, every other number twice: 76 spins.
    spins = [0] * 4 + [number for number in range(1, 37) for _ in range(2)]
    report = check_bias(spins, sectors=37)
    expected = 76 / 37
    statistic = (4 - expected) ** 2 / expected + 36 * (2 - expected) ** 2 / expected
    assert report.numbers.statistic == pytest.approx(statistic, rel=1e-12)
    assert report.numbers.p_value == pytest.approx(chi_square_sf(statistic, 36), rel=1e-12)
    # 37 one-pocket sectors are the number test again
    assert report.sectors.statistic == pytest.approx(statistic, rel=1e-12)
    assert sum(cell.expected for cell in check_bias(spins, sectors=8).sectors.cells) == pytest.approx(76)
    sizes_and_expected = [(5, 76 * 5 / 37)] * 5 + [(4, 76 * 4 / 37)] * 3
    assert [cell.expected for cell in check_bias(spins).sectors.cells] == pytest.approx(
        [e for _, e in sizes_and_expected]
    )
    assert report.numbers.most_over_represented()[0].label == "0"


def test_equal_counts_give_statistic_zero_and_p_one() -> None:
    report = check_bias(list(range(37)) * 3)
    assert report.numbers.statistic == pytest.approx(0.0, abs=1e-12)
    assert report.numbers.p_value == pytest.approx(1.0)
    assert report.numbers.most_over_represented() == []


def test_too_few_spins_are_warned_about() -> None:
    report = check_bias(uniform_spins(100, seed=1))
    assert len(report.warnings) == 1  # numbers: 100/37 < 5; sectors of 4 pockets: 100*4/37 >= 5
    assert "too few spins (100" in report.warnings[0] and "at least 185 spins" in report.warnings[0]
    report = check_bias(uniform_spins(40, seed=1))
    assert len(report.warnings) == 2 and "at least 47 spins" in report.warnings[1]
    assert check_bias(uniform_spins(185, seed=1)).warnings == ()


def test_alpha_decides_the_flag() -> None:
    favoured = wheel_sectors(8)[0]
    spins = sector_weighted_spins(1_500, seed=11, sector=favoured, weight=1.25)
    p = check_bias(spins).sectors.p_value
    assert check_bias(spins, alpha=min(0.999, p * 1.01)).sectors.biased
    assert not check_bias(spins, alpha=p * 0.99).sectors.biased


@pytest.mark.parametrize("bad", [[37], [-1], [True], [1.0], []])
def test_check_bias_refuses_what_is_not_a_result(bad: list[object]) -> None:
    with pytest.raises(ValueError):
        check_bias(bad)  # type: ignore[arg-type]


def test_check_bias_refuses_a_bad_alpha() -> None:
    for alpha in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            check_bias([1, 2, 3], alpha=alpha)


def result_envelope(sequence: int, number: int, event_id: str | None = None) -> str:
    return json.dumps(
        {
            "specversion": "1.0",
            "id": event_id or f"evt-{sequence}",
            "source": "studio/s1/table/rou-1",
            "type": "round.result",
            "time": "2024-06-11T10:00:00.000Z",
            "recordedtime": "2024-06-11T10:00:00.005Z",
            "sequence": str(sequence).zfill(12),
            "subject": f"rou-1-{sequence:07d}",
            "historical": False,
            "data": {"game": "roulette", "round_id": f"rou-1-{sequence:07d}", "number": number},
        }
    )


def test_cli_fair_numbers_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "spins.txt", [str(n) for n in uniform_spins(10_000, seed=20240611)])
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "Wheel bias check: 10000 spins" in out and "Verdict: no bias flagged" in out


def test_cli_biased_numbers_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spins = sector_weighted_spins(10_000, seed=7, sector=wheel_sectors(8)[2], weight=1.3)
    path = write_lines(tmp_path / "spins.txt", ["# night of the 11th", "", *map(str, spins)])
    assert main([str(path), "--sectors", "8", "--alpha", "0.01"]) == 1
    assert "Verdict: BIAS FLAGGED" in capsys.readouterr().out


def test_cli_reads_result_events_and_skips_the_rest(tmp_path: Path) -> None:
    lines = [
        json.dumps({"type": "round.opened", "id": "evt-0", "data": {"round_id": "r1", "game": "roulette"}}),
        result_envelope(1, 17),
        result_envelope(2, 0),
        result_envelope(2, 0),  # re-sent after a reconnect: same id, counted once
        json.dumps({"type": "round.result", "id": "evt-9", "data": {"game": "baccarat", "winner": "tie"}}),
        json.dumps({"type": "round.closed", "id": "evt-3", "data": {"round_id": "r1"}}),
        result_envelope(4, 36),
    ]
    assert read_numbers(write_lines(tmp_path / "events.jsonl", lines)) == [17, 0, 36]


def test_cli_events_file_end_to_end(tmp_path: Path) -> None:
    spins = uniform_spins(2_000, seed=5)
    path = write_lines(tmp_path / "events.jsonl", [result_envelope(i + 1, n) for i, n in enumerate(spins)])
    assert read_numbers(path) == spins
    assert main([str(path)]) == (1 if check_bias(spins).biased else 0) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1\n2\n00\n", "spins.txt:3: '00' is not a single-zero roulette number"),
        ("1\n37\n", "spins.txt:2: 37 is not a single-zero roulette number (0-36)"),
        ("1\nseven\n", "spins.txt:2: 'seven' is not a single-zero roulette number"),
        ("{not json\n", "spins.txt:1: not valid JSON"),
        ('{"type": "round.result", "data": {"game": "roulette", "number": "12"}}\n', "data.number '12'"),
        ('{"type": "round.result", "data": 5}\n', "round.result without a data object"),
        ("# only a comment\n\n", "spins.txt: no roulette results found"),
        ('{"type": "round.opened", "data": {}}\n', "no roulette results found"),
    ],
)
def test_cli_unreadable_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "spins.txt"
    path.write_text(content, encoding="utf-8")
    assert main([str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tablectl: error: ") and message in captured.err
    assert captured.err.count("\n") == 1


def test_cli_missing_and_binary_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.txt")]) == 2
    assert capsys.readouterr().err == f"tablectl: error: {tmp_path / 'nope.txt'}: no such file\n"
    binary = tmp_path / "spins.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage")
    assert main([str(binary)]) == 2
    assert capsys.readouterr().err.endswith("not a UTF-8 text file\n")
    with pytest.raises(UnreadableInput):
        read_numbers(tmp_path)  # a directory


@pytest.mark.parametrize(
    "args", [["--sectors", "1"], ["--sectors", "x"], ["--alpha", "1.5"], ["--alpha", "0"]]
)
def test_cli_bad_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    path = write_lines(tmp_path / "spins.txt", ["1"])
    with pytest.raises(SystemExit) as exc:
        main([str(path), *args])
    assert exc.value.code == 2


def test_register_adds_wheel_bias_under_calibrate() -> None:
    parser = argparse.ArgumentParser(prog="tablectl")
    commands = parser.add_subparsers(dest="command", required=True)
    calibrate = commands.add_parser("calibrate")
    register(calibrate.add_subparsers(dest="calibration", required=True))
    args = parser.parse_args(["calibrate", "wheel-bias", "spins.txt", "--sectors", "12", "--alpha", "0.05"])
    assert (args.file, args.sectors, args.alpha) == ("spins.txt", 12, 0.05)
    assert callable(args.func)
