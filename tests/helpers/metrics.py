"""What the tests of `test_metrics`, split by kind, share: `tests/unit/core/test_metrics.py`,
`tests/integration/test_metrics.py`, `tests/e2e/test_metrics.py`."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

CARDS = ["9S", "8D", "KC", "5H", "2C", "3D", "4H", "TS", "AS", "QD"]
LABELS = {"studio": "s1", "table": "bac-m"}


class Scrape:
    def __init__(self, text: str) -> None:
        self.families = {family.name: family for family in text_string_to_metric_families(text)}
        self.samples: list[Sample] = [
            sample for family in self.families.values() for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        found = [s.value for s in self.samples if s.name == name and s.labels == {**LABELS, **labels}]
        assert len(found) == 1, (name, labels, [s for s in self.samples if s.name == name])
        return found[0]
