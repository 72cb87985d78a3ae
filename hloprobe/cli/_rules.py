"""The command line's rules that absl does not have: a list flag of
closed vocabulary (`EnumListParser`, for `cli._flags`), and why a command
refuses a flag of other commands (`NOT_FOR`, for `cli`'s usage error),
where "drop it" alone would hide a plan.

It prints nothing and reads no flag.

Private in intent: use the package, `hloprobe.cli`.
"""

from __future__ import annotations

from absl import flags

from hloprobe.errors import did_you_mean

__all__ = ["EnumListParser", "NOT_FOR"]

# (flag, command) -> why the command refuses the flag, in the usage error.
_WHOLE = "each release's sweep runs whole in its own venv's Python"
_NO_SHARD = f"{_WHOLE}, and `merge` joins `sweep` shards only"
_NO_RAY = f"{_WHOLE}, a venv with no Ray in it"
NOT_FOR = {
  (flag, command): why
  for command in ("versions", "bisect")
  for flag, why in (
    ("shard", _NO_SHARD),
    ("executor", _NO_RAY),
    ("ray_address", _NO_RAY),
  )
}


class EnumListParser(flags.ListParser):
  """A comma-separated list (absl's ListParser) whose every item is one of
  `enum_values` (checked by absl's EnumParser, as DEFINE_enum checks).

  absl has no list-of-enum flag, and DEFINE_multi_enum takes one value per
  flag (`--precisions=a --precisions=b`), which would break
  `--precisions=a,b`. An empty item is left to the flag's validator, which
  says "no empty ones". A bad item's error names the nearest value first
  (`errors.did_you_mean`, with `aliases`: "tf32" -> "tensorfloat32").
  """

  def __init__(self, enum_values, aliases=None):
    super().__init__()
    self._values = list(enum_values)
    self._aliases = dict(aliases or {})
    self._item = flags.EnumParser(self._values)

  def parse(self, argument):
    """The list's items, each checked against `enum_values`.

    Raises:
      ValueError: an item is none of them (the nearest value named).
    """
    items = super().parse(argument)
    for item in filter(None, items):
      try:
        self._item.parse(item)
      except ValueError as e:
        near = did_you_mean(item, self._values, self._aliases)
        raise ValueError(f"{item!r}: {near}{e}") from None
    return items
