"""The tests. Their shared harnesses are the testing kit, `controller.testing`; the few helpers only tests
share are the modules of `tests.helpers`. Both get pytest's assertion rewriting, as the test modules
do, so a failed `assert` in a helper shows its values too."""

import pytest

pytest.register_assert_rewrite("controller.testing", "tests.helpers")
