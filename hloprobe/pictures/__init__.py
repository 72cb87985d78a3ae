"""Pictures of a sweep: the row-0 error plot, the HTML report and the Model
Explorer overlay.

Each module takes the sweep's records (`records.ConfigResult`) and
`explain`'s records as arguments and imports its optional library
(matplotlib, Model Explorer) only when called.

The stage's interface is the names below (`__all__`), what the command
line uses: `Outputs` (the files asked for), `check_extras`, `show_sweep`,
`show_explanation`, `progress_printer` and Model Explorer's `view`. Import
them from here; the modules behind them are private in intent:

  outputs         the files and pages a command writes
  plot            the row-0 error plot (matplotlib)
  html_report     the HTML report
  model_explorer  the Model Explorer overlay and viewer
"""

from __future__ import annotations

from hloprobe.pictures.model_explorer import view as view
from hloprobe.pictures.outputs import Outputs as Outputs
from hloprobe.pictures.outputs import check_extras as check_extras
from hloprobe.pictures.outputs import progress_printer as progress_printer
from hloprobe.pictures.outputs import show_explanation as show_explanation
from hloprobe.pictures.outputs import show_sweep as show_sweep

__all__ = [
  "Outputs",
  "check_extras",
  "progress_printer",
  "show_explanation",
  "show_sweep",
  "view",
]
