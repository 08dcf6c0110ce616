"""kubernetes_asyncio's credential loaders, without importing its generated API client.

The runtime speaks HTTP itself (:mod:`runtime.client`) and needs ``kubernetes_asyncio`` only to
*load credentials*: ``Configuration`` and the kubeconfig / in-cluster loaders of
``kubernetes_asyncio.config``. Imported the ordinary way, those drag in the whole package: the
``__init__`` of ``kubernetes_asyncio`` imports every subpackage, and the ``__init__`` of
``kubernetes_asyncio.client`` imports its 65 API modules and ~770 OpenAPI model modules -- about
850 modules and 38 MiB of RSS, a third of an operator process, for classes it never uses.

This module is the one place the runtime imports kubernetes_asyncio for credentials. Before it
does, it registers ``kubernetes_asyncio``, ``kubernetes_asyncio.client`` and
``kubernetes_asyncio.client.models`` in ``sys.modules`` as *deferred packages*: the real module
objects, built from their real import specs, whose ``__init__`` has not run yet. A deferred
package behaves like the real one, only later (PEP 562 module ``__getattr__``/``__dir__``):

- a submodule (``kubernetes_asyncio.client.configuration``, ``kubernetes_asyncio.watch``) is
  imported on its own, as usual, without running the package's ``__init__``;
- anything else the package does not have yet (``CoreV1Api``, ``V1Pod``, ``__version__``, ``dir()``,
  ``from ... import *``) first runs the real ``__init__`` into the same module object, once, and
  is then looked up there. After that the module is exactly the one a plain import gives.

So other code in the process keeps working whatever it imports, before or after the runtime:
``from kubernetes_asyncio.client import CoreV1Api, V1Pod``, ``kubernetes_asyncio.watch.Watch``,
and ``ApiClient`` deserialising a model by name (it looks the class up on
``kubernetes_asyncio.client.models``) simply pay for the full client when they first need it. If
any of the three packages is already in ``sys.modules`` when this module is imported (someone
imported kubernetes_asyncio first), nothing is deferred: the package is used as it is.

``ApiClient`` and ``Configuration`` are set on the deferred ``kubernetes_asyncio.client`` up front,
as its ``__init__`` would set them, because ``kubernetes_asyncio.config`` imports exactly those two
names from it.

Thread safety: the real ``__init__`` runs at most once, under a lock; another thread that asks a
deferred package for a missing name meanwhile waits for it to finish. As with any import, two
threads importing the *same* package concurrently for the first time rely on the import system's
own per-module locks for the submodules.

Usage (inside ``runtime`` only; the names are kubernetes_asyncio's own)::

    from ._kube_credentials import Configuration, load_kube_config_from_dict

    configuration = Configuration()
    await load_kube_config_from_dict(kubeconfig_dict, client_configuration=configuration)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

# Parents first: each is found through its (already registered, deferred) parent's __path__.
DEFERRED_PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")

# One lock for every deferred package: running kubernetes_asyncio's __init__ runs the client's
# (its first statement imports it), and a single reentrant lock cannot be taken in two orders.
_init_lock = threading.RLock()


def _defer(name: str) -> types.ModuleType | None:
    """Register ``name`` as a deferred package; None when it cannot be found or loaded that way."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return None
    loader = spec.loader
    if not hasattr(loader, "exec_module"):
        return None
    module = importlib.util.module_from_spec(spec)
    state = {"initialised": False, "running": False}

    def run_init() -> None:
        # The import system sets no module lock here (the module is already in sys.modules), so
        # this lock is what keeps a second thread from running the __init__ a second time.
        with _init_lock:
            if state["initialised"] or state["running"]:
                # Done, or this very thread is inside the __init__ (a partly run module, as usual).
                return
            state["running"] = True
            try:
                loader.exec_module(module)
            finally:
                state["running"] = False
            state["initialised"] = True
            # From now on the module is an ordinary one: missing names raise AttributeError.
            for hook in ("__getattr__", "__dir__"):
                if module.__dict__.get(hook) is hooks[hook]:
                    del module.__dict__[hook]

    def __getattr__(attr: str) -> Any:
        if attr.isidentifier() and not attr.startswith("__") and not state["initialised"]:
            submodule = f"{name}.{attr}"
            if submodule in sys.modules or importlib.util.find_spec(submodule) is not None:
                return importlib.import_module(submodule)
        run_init()
        try:
            return module.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    def __dir__() -> list[str]:
        run_init()
        return sorted(module.__dict__)

    hooks: dict[str, Callable[..., Any]] = {"__getattr__": __getattr__, "__dir__": __dir__}
    module.__dict__.update(hooks)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def _defer_generated_client() -> bool:
    """Defer the three package ``__init__``\\ s unless kubernetes_asyncio is already (being) imported."""
    with _init_lock:
        if any(name in sys.modules for name in DEFERRED_PACKAGES):
            return False
        for name in DEFERRED_PACKAGES:
            if _defer(name) is None:
                # Not installed as a plain source package: undo, and let the normal imports below
                # succeed or fail as they would have.
                for registered in DEFERRED_PACKAGES:
                    sys.modules.pop(registered, None)
                return False
        return True


deferred = _defer_generated_client()
"""Whether this import deferred kubernetes_asyncio's package ``__init__``\\ s (False: they had run)."""

# These import submodules only (and, through the two names below, nothing from the deferred
# client's __init__): see the module docstring.
from kubernetes_asyncio.client.api_client import ApiClient  # noqa: E402
from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402

if deferred:
    _client = sys.modules["kubernetes_asyncio.client"]
    _client.ApiClient = ApiClient  # type: ignore[attr-defined]
    _client.Configuration = Configuration  # type: ignore[attr-defined]

from kubernetes_asyncio.config import (  # noqa: E402
    ConfigException,
    load_incluster_config,
    load_kube_config_from_dict,
)

__all__ = [
    "DEFERRED_PACKAGES",
    "ConfigException",
    "Configuration",
    "deferred",
    "load_incluster_config",
    "load_kube_config_from_dict",
]
