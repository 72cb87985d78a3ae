"""Rendering for people and machines; the only package that formats tables.

render (tables and results.json), explain (explanation records), explain_text
(their text and JSON).
"""

from __future__ import annotations

__all__: list[str] = []
