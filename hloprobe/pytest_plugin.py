"""hloprobe's pytest plugin: a user's case checked against goldens in
their repository.

Registered by the `pytest11` entry point (pyproject.toml), so every pytest
of an environment with hloprobe installed has it:

    def test_mlp_numerics(hloprobe_golden):
      hloprobe_golden.check(mlp, x, w, targets=["cpu", "a100"],
                            precisions=["float32"], batch_sizes=[1, 8])

`hloprobe_golden.check` sweeps the case as `hloprobe.sweep` does (its
arguments are `sweep`'s), with the passes named as goldens are made, and
compares the snapshot with the golden folder beside the test file:
`__hloprobe__/<test file's stem>/<test name>/<case name>/`, a folder
`hloprobe golden` reads too (files, MANIFEST.json; like syrupy's
`__snapshots__`). A difference fails the test with the dot sites' changes
in words and the unified diffs (`golden.CheckResult.render`); a missing
folder fails it too. `pytest --hloprobe-update` rewrites the folders the
tests reach instead (pytest-regressions' `--force-regen`, syrupy's
`--snapshot-update`), and the tests pass. The folder is found from the
test file's path, and MANIFEST.json keeps paths relative to it, so pytest
runs the same from any directory.

Loading the plugin imports nothing of hloprobe's stages (nor jax): a
pytest session that uses no `hloprobe_golden` pays nothing for it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable

import pytest

__all__ = [
  "GOLDEN_FOLDER",
  "HloprobeGolden",
  "hloprobe_golden",
  "pytest_addoption",
]

# The folder beside a test file that holds its goldens.
GOLDEN_FOLDER = "__hloprobe__"
_UPDATE = "--hloprobe-update"
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9_.\-]+")
# A failure message shows at most this many lines of each file's diff.
_DIFF_LINES = 60


def pytest_addoption(parser) -> None:
  """pytest's hook: adds the plugin's options (the golden update flag)."""
  group = parser.getgroup("hloprobe")
  group.addoption(
    _UPDATE,
    action="store_true",
    default=False,
    help="rewrite the hloprobe golden folders (__hloprobe__/ beside each "
    "test file) that the hloprobe_golden fixture checks, instead of "
    "comparing with them",
  )


@dataclasses.dataclass(frozen=True)
class HloprobeGolden:
  """The `hloprobe_golden` fixture's value: one test's golden folders.

  Attributes:
    folder: `__hloprobe__/<test file's stem>/<test name>` beside the test
      file (absolute); each case gets a folder in it, named after it.
    update: `--hloprobe-update` was given: rewrite, do not compare.
  """

  folder: str
  update: bool

  def check(
    self, fn_or_case: Callable | object | str, *example_args, **options
  ):
    """Sweeps the case (`hloprobe.sweep`'s arguments) and compares it with
    its goldens, or rewrites them under --hloprobe-update.

    Returns:
      The `golden.CheckResult` (matched), or the `golden.UpdateResult`.

    Raises:
      pytest.fail.Exception: the goldens differ or are missing (the
        message says how, and how to accept the change).
    """
    from hloprobe.api import plan_case, run
    from hloprobe.compile import jaxlib_release
    from hloprobe.golden import against_goldens

    plan = plan_case(
      fn_or_case, *example_args, **options | {"explain_passes": True}
    )
    golden_dir = os.path.join(self.folder, _safe(plan.cases[0].name))
    if not self.update and not os.path.isdir(golden_dir):
      # Said before the sweep: nothing to compare it with.
      pytest.fail(
        f"hloprobe: no goldens at {golden_dir}; write them with "
        f"`pytest {_UPDATE}` and commit them",
        pytrace=False,
      )
    records = run(plan)
    result = against_goldens(
      golden_dir,
      records,
      jaxlib_release().versions,
      plan,
      update=self.update,
    )
    if self.update:
      return result
    if not result.ok:
      pytest.fail(_failure(result, _causes(plan, records)), pytrace=False)
    return result


def _causes(plan, records) -> list[str]:
  """The new sweep's findings, one line per cause (as `explain` groups
  them: `api.answer`, no fix tried); [] when every config is within its
  band."""
  from hloprobe.api import answer

  found = answer(plan, records, try_fixes=False, list_untried=False)
  return found.cause_lines("the sweep now has these findings, one per cause:")


def _safe(name: str) -> str:
  """A test or case name as a folder name: `test_x[a/b]` -> `test_x_a_b_`."""
  return _UNSAFE_RE.sub("_", name)


def _failure(result, causes: list[str] = ()) -> str:
  """The failure message: the new sweep's findings by cause (`causes`'
  lines, if any), what changed in words, then each file's diff (at most
  `_DIFF_LINES` lines each), then how to accept it."""
  shown = result.capped(_DIFF_LINES)
  found = "".join(f"{line}\n" for line in causes)
  return (
    f"hloprobe goldens differ\n{found}{shown.render()}\n\nIf the change is "
    f"intended, rewrite them with `pytest {_UPDATE}` and commit the diff"
  )


@pytest.fixture
def hloprobe_golden(request) -> HloprobeGolden:
  """Checks a case against goldens beside the test file (`HloprobeGolden`);
  `pytest --hloprobe-update` rewrites them."""
  path = os.path.abspath(str(request.path))
  folder = os.path.join(
    os.path.dirname(path),
    GOLDEN_FOLDER,
    _safe(os.path.splitext(os.path.basename(path))[0]),
    _safe(request.node.name),
  )
  return HloprobeGolden(folder, bool(request.config.getoption(_UPDATE)))
