"""Is this roulette wheel biased? Chi-square goodness-of-fit tests on its results.

Two tests, each against a fair single-zero wheel:

- numbers: the 37 pockets should come up equally often (36 degrees of freedom);
- sectors: contiguous runs of pockets around the wheel, of near-equal size, should come up in proportion
  to their size. A tilted wheel, a worn ball track or a dropped fret favours a region of the wheel rather
  than one number; pooling neighbours concentrates that signal, so it shows with far fewer spins than the
  number test.

The sectors start at pocket 0 and follow the wheel clockwise. A bias straddling a sector boundary is split
over two sectors and shows less; the number test still sees it.

The chi-square survival function (the p-value) is computed here from the regularized upper incomplete gamma
function, so the check needs nothing beyond the standard library.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# European single-zero pocket order, clockwise from 0.
EUROPEAN_WHEEL_ORDER: tuple[int, ...] = (
    0, 32, 15, 19, 4, 21, 2, 25, 17, 34, 6, 27, 13, 36, 11, 30, 8, 23, 10,
    5, 24, 16, 33, 1, 20, 14, 31, 9, 22, 18, 29, 7, 28, 12, 35, 3, 26,
)  # fmt: skip
POCKETS = len(EUROPEAN_WHEEL_ORDER)

# The usual rule of thumb for the chi-square approximation to hold.
MIN_EXPECTED_PER_CELL = 5.0

_MAX_ITERATIONS = 10_000
_EPSILON = 1e-15
_TINY = 1e-300


# -- the chi-square distribution ---------------------------------------------------------------------------


def regularized_upper_gamma(a: float, x: float) -> float:
    """Q(a, x) = Γ(a, x) / Γ(a), for a > 0 and x >= 0."""
    if a <= 0:
        raise ValueError(f"shape a must be positive, got {a}")
    if x < 0:
        raise ValueError(f"x must not be negative, got {x}")
    if x == 0:
        return 1.0
    # The series converges fast below a + 1, the continued fraction above: each where the other is slow.
    if x < a + 1:
        return max(0.0, 1.0 - _lower_gamma_series(a, x))
    return _upper_gamma_continued_fraction(a, x)


def _log_prefactor(a: float, x: float) -> float:
    """log(x^a e^-x / Γ(a)), kept in logs so large degrees of freedom do not overflow."""
    return a * math.log(x) - x - math.lgamma(a)


def _lower_gamma_series(a: float, x: float) -> float:
    """P(a, x) from its power series: x^a e^-x / Γ(a) · Σ x^n / (a (a+1) ... (a+n))."""
    term = 1.0 / a
    total = term
    denominator = a
    for _ in range(_MAX_ITERATIONS):
        denominator += 1.0
        term *= x / denominator
        total += term
        if abs(term) < abs(total) * _EPSILON:
            return total * math.exp(_log_prefactor(a, x))
    raise ArithmeticError(f"incomplete gamma series did not converge (a={a}, x={x})")


def _upper_gamma_continued_fraction(a: float, x: float) -> float:
    """Q(a, x) from its continued fraction, evaluated with the modified Lentz method."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    fraction = d
    for i in range(1, _MAX_ITERATIONS):
        numerator = -i * (i - a)
        b += 2.0
        d = numerator * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + numerator / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        step = d * c
        fraction *= step
        if abs(step - 1.0) < _EPSILON:
            return math.exp(_log_prefactor(a, x)) * fraction
    raise ArithmeticError(f"incomplete gamma continued fraction did not converge (a={a}, x={x})")


def chi_square_sf(statistic: float, degrees_of_freedom: float) -> float:
    """P(X >= statistic) for X chi-square distributed: the p-value of a goodness-of-fit test."""
    if degrees_of_freedom <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {degrees_of_freedom}")
    if statistic <= 0:
        return 1.0
    return regularized_upper_gamma(degrees_of_freedom / 2.0, statistic / 2.0)


# -- the tests -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One category of a test: a number, or a sector of the wheel."""

    label: str
    observed: int
    expected: float

    @property
    def residual(self) -> float:
        """(observed - expected) / sqrt(expected): how many standard deviations off, roughly."""
        return (self.observed - self.expected) / math.sqrt(self.expected)


@dataclass(frozen=True, slots=True)
class ChiSquareTest:
    name: str
    statistic: float
    degrees_of_freedom: int
    p_value: float
    alpha: float
    cells: tuple[Cell, ...]

    @property
    def biased(self) -> bool:
        """The fair-wheel hypothesis is rejected at `alpha`."""
        return self.p_value < self.alpha

    @property
    def min_expected(self) -> float:
        return min(cell.expected for cell in self.cells)

    def most_over_represented(self, count: int = 3) -> list[Cell]:
        """The cells furthest above their expected count (only those above it), worst first."""
        above = [cell for cell in self.cells if cell.observed > cell.expected]
        return sorted(above, key=lambda cell: cell.residual, reverse=True)[:count]


def chi_square_test(name: str, cells: Sequence[Cell], alpha: float) -> ChiSquareTest:
    statistic = sum((cell.observed - cell.expected) ** 2 / cell.expected for cell in cells)
    degrees_of_freedom = len(cells) - 1
    return ChiSquareTest(
        name=name,
        statistic=statistic,
        degrees_of_freedom=degrees_of_freedom,
        p_value=chi_square_sf(statistic, degrees_of_freedom),
        alpha=alpha,
        cells=tuple(cells),
    )


def wheel_sectors(count: int) -> tuple[tuple[int, ...], ...]:
    """Cut the wheel into `count` sectors, clockwise from 0; sizes differ by one pocket at most."""
    if not 2 <= count <= POCKETS:
        raise ValueError(f"sectors must be between 2 and {POCKETS}, got {count}")
    base, larger = divmod(POCKETS, count)
    sectors: list[tuple[int, ...]] = []
    start = 0
    for index in range(count):
        size = base + (1 if index < larger else 0)
        sectors.append(EUROPEAN_WHEEL_ORDER[start : start + size])
        start += size
    return tuple(sectors)


@dataclass(frozen=True, slots=True)
class BiasReport:
    spins: int
    alpha: float
    numbers: ChiSquareTest
    sectors: ChiSquareTest
    sector_pockets: tuple[tuple[int, ...], ...]
    warnings: tuple[str, ...]

    @property
    def biased(self) -> bool:
        return self.numbers.biased or self.sectors.biased

    def render(self) -> str:
        """A report an operator can read."""
        lines = [f"Wheel bias check: {self.spins} spins, significance level alpha = {self.alpha:g}", ""]
        for test in (self.numbers, self.sectors):
            verdict = "BIAS FLAGGED" if test.biased else "no bias detected"
            lines.append(
                f"{test.name}: chi-square = {test.statistic:.2f}, df = {test.degrees_of_freedom}, "
                f"p = {test.p_value:.4g} -> {verdict}"
            )
            over = test.most_over_represented()
            if over:
                lines.append("  most over-represented:")
                lines += [
                    f"    {cell.label}: {cell.observed} seen, {cell.expected:.1f} expected "
                    f"({cell.residual:+.1f} sd)"
                    for cell in over
                ]
        if self.warnings:
            lines.append("")
            lines += [f"warning: {warning}" for warning in self.warnings]
        lines.append("")
        lines.append(
            "Verdict: BIAS FLAGGED - have the wheel inspected (level, ball track, frets, rotor bearing)"
            if self.biased
            else "Verdict: no bias flagged"
        )
        return "\n".join(lines)


def check_bias(numbers: Sequence[int], *, sectors: int = 8, alpha: float = 0.01) -> BiasReport:
    """Test a wheel's results (0-36) for bias by number and by wheel sector."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    for value in numbers:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 36:
            raise ValueError(f"{value!r} is not a single-zero roulette number (0-36)")
    spins = len(numbers)
    if spins == 0:
        raise ValueError("no spins to test")
    sector_pockets = wheel_sectors(sectors)
    counts = Counter(numbers)

    per_number = spins / POCKETS
    number_cells = [Cell(str(number), counts[number], per_number) for number in range(POCKETS)]
    sector_cells = [
        Cell(
            f"sector {index + 1} ({'-'.join(map(str, pockets))})",
            sum(counts[number] for number in pockets),
            spins * len(pockets) / POCKETS,
        )
        for index, pockets in enumerate(sector_pockets)
    ]
    number_test = chi_square_test(f"Numbers ({POCKETS} pockets)", number_cells, alpha)
    sector_test = chi_square_test(f"Sectors ({sectors} contiguous sectors)", sector_cells, alpha)

    warnings = [
        _too_few_spins_warning(test, spins, min(len(cell_pockets) for cell_pockets in pockets))
        for test, pockets in (
            (number_test, tuple((number,) for number in range(POCKETS))),
            (sector_test, sector_pockets),
        )
        if test.min_expected < MIN_EXPECTED_PER_CELL
    ]
    return BiasReport(
        spins=spins,
        alpha=alpha,
        numbers=number_test,
        sectors=sector_test,
        sector_pockets=sector_pockets,
        warnings=tuple(warnings),
    )


def _too_few_spins_warning(test: ChiSquareTest, spins: int, smallest_cell_pockets: int) -> str:
    needed = math.ceil(MIN_EXPECTED_PER_CELL * POCKETS / smallest_cell_pockets)
    return (
        f"{test.name}: too few spins ({spins}; expected count per cell {test.min_expected:.1f} < "
        f"{MIN_EXPECTED_PER_CELL:g}): the p-value is unreliable, collect at least {needed} spins"
    )
