"""hloprobe under other jax versions.

`compat` bridges jax API differences and says whether the running jaxlib is
the checked one; `venvs` (cached virtualenvs per jaxlib), `run` (a worker
per venv, JSON both ways), `driver`, `compare` (the cross-version table),
`bisect` and `commands` make `hloprobe versions` / `hloprobe bisect`;
`gpu_check` is `make gpu-check`. Importing this package imports no module
of it.
"""

from __future__ import annotations

__all__: list[str] = []
