"""Pictures of a sweep: the row-0 error plot, the HTML report and the Model
Explorer overlay.

Each module takes the sweep's records (`records.ConfigResult`) and
`explain`'s records as arguments and imports its optional library
(matplotlib, Model Explorer) only when called. Nothing here prints: the
command layer (`hloprobe.commands`) does.

The stage's interface is the names below (`__all__`), what the command
layer uses: `Outputs` (the files asked for), `check_extras`, `html_page`,
`write_files` and `wrote_line`, and Model Explorer's `pick` and `serve`.
Import them from here; the modules behind them are private in intent:

  outputs         the files and pages a command writes
  plot            the row-0 error plot (matplotlib)
  html_report     the HTML report
  model_explorer  the Model Explorer overlay and viewer
"""

from __future__ import annotations

from hloprobe.pictures.model_explorer import pick as pick
from hloprobe.pictures.model_explorer import serve as serve
from hloprobe.pictures.outputs import Outputs as Outputs
from hloprobe.pictures.outputs import check_extras as check_extras
from hloprobe.pictures.outputs import html_page as html_page
from hloprobe.pictures.outputs import write_files as write_files
from hloprobe.pictures.outputs import wrote_line as wrote_line

__all__ = [
  "Outputs",
  "check_extras",
  "html_page",
  "pick",
  "serve",
  "write_files",
  "wrote_line",
]
