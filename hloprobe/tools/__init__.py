"""Developer tools kept apart from the library (bench: sweep timing)."""

from __future__ import annotations

__all__: list[str] = []
