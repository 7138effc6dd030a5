"""The theory's tie of two exponents as a test, not an assumption.

The theory ties the D exponent of the fluctuation to its L*M exponent: sqrt(D/(LM)), g = b in
c2 D^g (LM)^-b. Where a slice varies D, the fits fit g and b apart and test the tie on their
difference: g - b with its 95% interval from the same resamples as the two exponents (paired:
what moves both in a resample cancels), and a verdict:

- "tie holds": the interval contains 0 and its half-width is at most ``TIE_HALF_WIDTH`` (an
  interval that cannot tell g = 0.3 from b = 0.5 tests nothing);
- "tie rejected": the interval excludes 0;
- "tie not tested": the interval contains 0 but is wider than that, or there is none.

The tied law (the theory's form, today's fit) is fitted beside it from the same resamples and
printed on its own line, with a warning when its tie is rejected (its one exponent is then a
blend of two that describes neither axis).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...formatting import fmt

TIE_HALF_WIDTH = 0.2  # the widest 95% half-width of g - b that still tests the tie
HOLDS, REJECTED, UNTESTED = "tie holds", "tie rejected", "tie not tested"


def tie_verdict(low: float, high: float) -> str:
    """The verdict of a tie from the 95% interval of its difference (module docstring)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return UNTESTED
    if low > 0 or high < 0:
        return REJECTED
    return HOLDS if (high - low) / 2 <= TIE_HALF_WIDTH else UNTESTED


@dataclass
class TieTest:
    """A tie g = b tested on g - b, and the tied law fitted beside the untied one.

    Attributes:
        untied, tied: the names of the two exponents (``g``, ``b``). theory: the tied form in words.
        difference, ci_low, ci_high: untied - tied exponent and its paired 95% interval.
        tied_law: the label of the tied law's line (``decomposed_tied``, ``free_rss_tied``).
        tied_estimates: parameter -> (estimate, ci_low, ci_high) of the tied law.
    """

    untied: str
    tied: str
    theory: str
    difference: float
    ci_low: float
    ci_high: float
    tied_law: str
    tied_estimates: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return tie_verdict(self.ci_low, self.ci_high)

    def lines(self) -> list[str]:
        """What ``explorer fit`` prints: the test, then the tied law."""
        half = (self.ci_high - self.ci_low) / 2
        why = {HOLDS: "the interval holds 0 and is narrower than +-" + fmt(TIE_HALF_WIDTH, "g"),
               REJECTED: "the interval excludes 0",
               UNTESTED: "the interval is wider than +-" + fmt(TIE_HALF_WIDTH, "g") + " (or there is none): "
                         "the data cannot tell"}[self.verdict]
        shown = ", ".join(f"{name} = {fmt(est, missing='nan')} [{fmt(lo, missing='nan')}, {fmt(hi, missing='nan')}]"
                          for name, (est, lo, hi) in self.tied_estimates.items())
        return [f"tie {self.untied} = {self.tied} (theory: {self.theory}): {self.untied} - {self.tied} = "
                f"{fmt(self.difference, '.3f', missing='nan')} [{fmt(self.ci_low, '.3f', missing='nan')}, "
                f"{fmt(self.ci_high, '.3f', missing='nan')}] (half-width {fmt(half, '.3f', missing='nan')}, "
                f"paired: the same resamples): {self.verdict}, {why}",
                f"{self.tied_law} (the tied law, {self.untied} = {self.tied}): {shown}"]

    def warnings(self) -> list[str]:
        """A warning when the tie is rejected: the tied law's exponent describes neither axis."""
        if self.verdict != REJECTED:
            return []
        tied = self.tied_estimates.get(self.tied, (math.nan,))[0]
        return [f"the theory's tie {self.untied} = {self.tied} is rejected ({self.untied} - {self.tied} = "
                f"{fmt(self.difference, '.3f', missing='nan')} [{fmt(self.ci_low, '.3f', missing='nan')}, "
                f"{fmt(self.ci_high, '.3f', missing='nan')}]): the tied law's {self.tied} = "
                f"{fmt(tied, '.3f', missing='nan')} ({self.tied_law}) blends the D and L*M exponents; read "
                f"{self.untied} and {self.tied} of the untied law"]


__all__ = ["HOLDS", "REJECTED", "TIE_HALF_WIDTH", "UNTESTED", "TieTest", "tie_verdict"]
