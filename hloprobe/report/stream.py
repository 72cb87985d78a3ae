"""results.jsonl: each config's results.json entry as the config finishes.

A sweep the user interrupts keeps what finished: `Progress.add` appends one
JSON line per config to `<output_dir>/results.jsonl` (`files.RESULTS_STREAM`,
`files.append_result_line`); results.json is written whole at the end.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
import os

from hloprobe.report import files

__all__ = ["Progress", "start_stream"]


@dataclasses.dataclass
class Progress:
  """The configs a running sweep finished, streamed to --output_dir.

  Mutable by design: the sweep's `on_result` callback adds to it as configs
  finish. A failed append stops the stream (`output_dir` becomes None);
  the final write then says `cannot write`, after the results.

  Attributes:
    total: the sweep's number of configs.
    output_dir: where results.jsonl grows, or None (no stream).
    done: the finished `ConfigResult`s, in order.
  """

  total: int
  output_dir: str | None
  done: list = dataclasses.field(default_factory=list)

  def add(self, r) -> None:
    self.done.append(r)
    if self.output_dir:
      try:
        files.append_result_line(self.output_dir, r)
      except OSError:  # the final write says `cannot write`, after results
        self.output_dir = None


def start_stream(output_dir: str | None) -> str | None:
  """Empties --output_dir's results.jsonl; None (no stream) if it cannot."""
  if not output_dir:
    return None
  try:
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, files.RESULTS_STREAM), "w"):
      pass
  except OSError:  # the final write says `cannot write`, after results
    return None
  return output_dir
