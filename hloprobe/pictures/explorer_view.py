"""`hloprobe view`: Model Explorer on a --model_explorer folder, opening on
the worst finding.

`pick` chooses the configs of the folder's index (`model_explorer`) that
the flags given name, worst first: by how far each strays beyond its band
(the index's "beyond", `severity.beyond_band`), configs not compared last,
sweep order among equals; Model Explorer shows the first model it is given
(0.1.34's app: the first graph collection loaded). `open_server` serves
Model Explorer's web app on them (`explorer_server`: those files only,
behind a token) with an opening view: the worst config's graph with
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

`pick_configs` is `hloprobe view`'s one call: the extra checked, the
configs picked (`Picked`), whose `open` serves them.

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.parse
from collections.abc import Collection, Mapping, Sequence

from hloprobe.errors import HloprobeError, InvalidArgumentError
from hloprobe.pictures.explorer_server import ViewServer
from hloprobe.pictures.model_explorer import (
  MAX_MODELS,
  import_explorer,
  load_index,
)

__all__ = [
  "EXPAND_ALL",
  "Picked",
  "open_server",
  "opening_config",
  "opening_state",
  "pick",
  "pick_configs",
]

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


def open_server(out_dir: str, entries: Sequence[dict], port: int):
  """A bound `explorer_server.ViewServer` of configs of a `write_overlay`
  folder (`pick`'s entries, worst first) and the URL that opens them on
  the first (`opening_config`): the port and the token only, which the
  server redirects to the opening view (no paths printed).

  Args:
    out_dir: the folder.
    entries: the entries to show, at most MAX_MODELS (Model Explorer 0.1.34
      opens up to 10 models at once).
    port: 8080: the first free of 8080-8099, else any; 0: any free port.

  The server binds to 127.0.0.1 only and reads no file but these
  entries' models and overlays (see `explorer_server`).

  Raises:
    HloprobeError: Model Explorer is missing, more than MAX_MODELS, the
      port cannot be bound.
    InvalidArgumentError: a port outside 0-65535; the index names a file
      outside the folder.
  """
  model_explorer, _, _ = import_explorer()
  if len(entries) > MAX_MODELS:
    raise HloprobeError(
      f"Model Explorer opens at most {MAX_MODELS} models, got {len(entries)}"
    )
  from model_explorer.extension_manager import ExtensionManager

  config = opening_config(out_dir, entries)
  _check_inside(out_dir, config)
  extensions = ExtensionManager([])
  extensions.load_extensions()
  server = ViewServer(
    [m["url"] for m in config.model_sources],
    config.node_data_sources,
    port,
    os.path.join(os.path.dirname(model_explorer.__file__), "web_app"),
    extensions,
    opening=f"data={config.to_url_param_value()}",
  )
  return server, server.url()


def _check_inside(out_dir: str, config) -> None:
  """Refuses an index naming a model or overlay outside `out_dir` (an
  absolute name, `..`, or a symlink out of it): `view` serves its own
  folder's files only.

  Raises:
    InvalidArgumentError: one such file, named.
  """
  folder = os.path.realpath(out_dir)
  paths = [m["url"] for m in config.model_sources]
  for path in [*paths, *config.node_data_sources]:
    if os.path.commonpath([folder, os.path.realpath(path)]) != folder:
      raise InvalidArgumentError(
        f"{out_dir}'s index names {path}, outside the folder; `view` "
        "serves only the folder's own files"
      )


@dataclasses.dataclass(frozen=True)
class Picked:
  """`hloprobe view DIR`'s configs (`pick`), to serve (`open`).

  Attributes:
    out_dir: the `write_overlay` folder.
    entries: its index entries picked, worst first, at most MAX_MODELS
      (each with "target", "case", "n", "precision", ...).
    matched: how many entries matched the flags (may exceed `entries`).
  """

  out_dir: str
  entries: tuple[dict, ...]
  matched: int

  def open(self, port: int):
    """(the bound `explorer_server.ViewServer`, its URL) of `entries`
    (`open_server`; raises as it does)."""
    return open_server(self.out_dir, self.entries, port)


def pick_configs(out_dir: str, wanted: Mapping[str, Collection]) -> Picked:
  """`hloprobe view DIR`'s library call: Model Explorer checked installed,
  then the configs of the folder that `wanted` names, worst first (`pick`).

  Raises:
    InvalidArgumentError: Model Explorer is missing (the pip words), no
      readable index, or no config matches.
  """
  from hloprobe.pictures.outputs import check_extras

  check_extras(plot=False, explorer=True)
  picked, matched = pick(out_dir, wanted)
  return Picked(out_dir, tuple(picked), matched)
