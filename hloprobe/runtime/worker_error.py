"""The error a worker's death or timeout raises in the parent
(`WorkerError`), shared by the parent's side (`process`) and the worker's
(`serve`, which sends an exception back as one), so neither imports the
other.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

from hloprobe.errors import HloprobeError

__all__ = ["WorkerError"]


class WorkerError(HloprobeError):
  """Raised when a worker process dies (a signal, an abort) or times out.

  A worker that dies because XLA rejected a flag raises
  `errors.XlaFlagsError` instead.

  Attributes:
    stage: the stage the worker noted last before it died ("compile",
      "run", ...; see `Request.note_stage`), or None when it noted none (it died
      starting, e.g. on a flag XLA rejected) or did not die.
    timed_out: the call ran past its `timeout_s` (the worker was killed).
  """

  def __init__(
    self, message: str, stage: str | None = None, timed_out: bool = False
  ):
    super().__init__(message)
    self.stage, self.timed_out = stage, timed_out
