"""`hloprobe view`: Model Explorer on a --model_explorer folder, opening on
the worst finding.

`pick` chooses the configs of the folder's index (`model_explorer`) that
the flags given name, worst first: by how far each strays beyond its band
(the index's "beyond", `severity.beyond_band`), configs not compared last,
sweep order among equals; Model Explorer shows the first model it is given
(0.1.34's app: the first graph collection loaded). `serve` starts Model
Explorer with them and an opening view: the worst config's graph with
every layer expanded and its worst site (the index's "worst_site")
selected, so the coloured site nodes show at once.

The opening view is Model Explorer's own: its web app reads the `data`
URL parameter's JSON, whose "uiState" holds one pane state per pane
(`paneStates`: `deepestExpandedGroupNodeIds`, `selectedNodeId`,
`selectedGraphId`, `selectedCollectionLabel`, `flattenLayers`), the state
its "Share" link writes; `deepestExpandedGroupNodeIds` ["___all___"]
expands every layer, as the "Expand all layers" button does (checked in
ai-edge-model-explorer 0.1.34's web_app/main-*.js: the URL service's
`getUiState` and the renderer's relayout on the initial state; the
Python package's `ModelExplorerConfig.to_url_param_value` writes only
"models", "nodeData" and "nodeDataTargets", so `opening_config` adds
"uiState" to it).

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Collection, Mapping, Sequence

from hloprobe.errors import HloprobeError, InvalidArgumentError
from hloprobe.pictures.model_explorer import (
  MAX_MODELS,
  import_explorer,
  load_index,
)

__all__ = ["EXPAND_ALL", "opening_config", "opening_state", "pick", "serve"]

EXPAND_ALL = "___all___"  # Model Explorer 0.1.34: every layer expanded


def _worst_first(entry: dict) -> float:
  beyond = entry.get("beyond")
  return -1.0 if beyond is None else beyond


def pick(
  out_dir: str, wanted: Mapping[str, Collection]
) -> tuple[list[dict], int]:
  """`hloprobe view DIR`'s configs: the `load_index` entries of the folder
  whose every `wanted` key ("case", "target", "n", "precision") is among
  its values, worst first (see the module); the first MAX_MODELS of them,
  and how many matched.

  Raises:
    InvalidArgumentError: no readable index, or no config matches.
  """
  entries = load_index(out_dir)
  picked = [
    e
    for e in entries
    if all(e[key] in values for key, values in wanted.items())
  ]
  if not picked:
    raise InvalidArgumentError(
      f"no config in {out_dir} matches the flags given"
    )
  picked.sort(key=_worst_first, reverse=True)  # stable: sweep order kept
  return picked[:MAX_MODELS], len(picked)


def opening_state(entry: dict) -> dict:
  """Model Explorer's "uiState" opening `entry`'s graph (a `load_index`
  entry): every layer expanded, its worst site's node selected (none where
  no site stands out)."""
  site = entry.get("worst_site")
  node = entry["sites"].get(str(site)) if site is not None else None
  graph = (
    node["graph"]
    if node
    else next((s["graph"] for s in entry["sites"].values()), "")
  )
  return {
    "paneStates": [
      {
        "deepestExpandedGroupNodeIds": [EXPAND_ALL],
        "selectedNodeId": node["node"] if node else "",
        "selectedGraphId": graph,
        "selectedCollectionLabel": "",
        "widthFraction": 1,
        "selected": True,
        "flattenLayers": False,
      }
    ]
  }


def opening_config(out_dir: str, entries: Sequence[dict]):
  """A Model Explorer config (`model_explorer.config()`'s type) of
  `entries`' models, in order, each with its overlays, whose URL opens on
  the first (`opening_state`).

  Raises:
    HloprobeError: Model Explorer is missing.
  """
  model_explorer, _, _ = import_explorer()
  state = opening_state(entries[0]) if entries else None

  class _Opening(type(model_explorer.config())):
    """The config, its URL data with the opening view added."""

    def to_url_param_value(self) -> str:
      data = json.loads(urllib.parse.unquote(super().to_url_param_value()))
      if state is not None:
        data["uiState"] = state
      return urllib.parse.quote(json.dumps(data))

  config = _Opening()
  for e in entries:
    config.add_model_from_path(os.path.join(out_dir, e["model"]))
    for name in e["node_data"].values():
      config.add_node_data_from_path(
        os.path.join(out_dir, name), model_name=e["model"]
      )
  return config


def serve(
  out_dir: str, entries: Sequence[dict], port: int, open_browser: bool
) -> None:
  """Starts Model Explorer on configs of a `write_overlay` folder, opening
  on the first (`opening_config`); returns when the server stops (Ctrl+C).

  Args:
    out_dir: the folder.
    entries: `pick`'s entries to show (worst first), at most MAX_MODELS
      (Model Explorer 0.1.34 opens up to 10 models at once).
    port: the port; Model Explorer takes 8080 to mean "the first free port
      from 8080 up".
    open_browser: open a browser tab on the page.

  The server binds to 127.0.0.1 only: reachable from this machine alone.
  Each model gets its overlays.

  Raises:
    HloprobeError: Model Explorer is missing, or more than MAX_MODELS.
  """
  model_explorer, _, _ = import_explorer()
  if len(entries) > MAX_MODELS:
    raise HloprobeError(
      f"Model Explorer opens at most {MAX_MODELS} models, got {len(entries)}"
    )
  model_explorer.visualize_from_config(
    config=opening_config(out_dir, entries),
    host="127.0.0.1",
    port=port,
    no_open_in_browser=not open_browser,
  )
