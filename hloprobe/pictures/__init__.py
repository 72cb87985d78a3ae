"""Pictures of a sweep: the row-0 error plot, the HTML report and the Model
Explorer overlay.

Each module takes the sweep's records (`records.ConfigResult`) and
`explain`'s records as arguments and imports its optional library
(matplotlib, Model Explorer) only when called. Nothing here prints: the
command layer (`hloprobe.commands`) does.

The stage's interface is the names below (`__all__`), what the command
layer uses: `Outputs` (the files asked for, which checks them before a
sweep, makes the HTML page and writes them, returning the line saying
what it wrote: `check`, `page`, `write`), and Model
Explorer's `pick_configs` (`hloprobe view`'s configs, whose `open`
serves those configs alone);
`html_table`, the sweep table alone as an HTML fragment (sortable,
filterable, coloured as in the page: e.g. a notebook's `_repr_html_`).
Import them from here; the modules behind them are private in intent:

  outputs         the files and pages a command writes
  plot            the row-0 error plot (matplotlib)
  html_report     the HTML report (templates/: its Jinja2 templates; the
                  page's words are `report.page_words`')
  severity        how far a config strays beyond its band; its colour
  model_explorer  the Model Explorer overlay
  explorer_view   Model Explorer's viewer: which configs, opened how
  explorer_server `view`'s web server: only the given configs, a token
"""

from __future__ import annotations

from hloprobe.pictures.explorer_view import pick_configs as pick_configs
from hloprobe.pictures.html_report import html_table as html_table
from hloprobe.pictures.outputs import Outputs as Outputs
from hloprobe.pictures.severity import beyond_band as beyond_band

__all__ = [
  "Outputs",
  "beyond_band",
  "html_table",
  "pick_configs",
]
