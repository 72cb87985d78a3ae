"""Pictures of a sweep: the row-0 error plot, the HTML report and the Model
Explorer overlay.

Each module takes the sweep's records (`records.ConfigResult`) and
`explain`'s records as arguments and imports its optional library
(matplotlib, Model Explorer) only when called.
"""

from __future__ import annotations

__all__: list[str] = []
