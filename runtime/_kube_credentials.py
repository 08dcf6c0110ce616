"""kubernetes_asyncio's credential loaders, without importing its generated API client.

The runtime speaks HTTP itself (:mod:`runtime.client`) and needs ``kubernetes_asyncio`` only to
*load credentials*: ``Configuration`` and the kubeconfig / in-cluster loaders of
``kubernetes_asyncio.config``. Imported the ordinary way those drag in the generated client: the
``__init__`` of ``kubernetes_asyncio.client`` imports every generated API and OpenAPI model
module, hundreds of modules and tens of MiB of memory (``docs/performance.md``), for classes the
runtime never uses.

This module is the one place the runtime imports kubernetes_asyncio for credentials. First, it
registers ``kubernetes_asyncio.client`` and ``kubernetes_asyncio.client.models`` in
``sys.modules`` as *deferred packages*: the real module objects, built from their real import
specs, whose ``__init__`` has not run yet. A deferred package behaves like the real one, only
later (PEP 562 module ``__getattr__`` and ``__dir__``):

- a submodule (``kubernetes_asyncio.client.configuration``, ``...client.models.v1_pod``) is
  imported on its own, as usual, without running the package's ``__init__``;
- the client's own classes that its ``__init__`` takes from its small modules -- ``ApiClient``,
  ``Configuration`` and the exceptions -- come from those modules (the credential loaders and
  ``watch``/``stream``/``dynamic`` import exactly these);
- any other name (``CoreV1Api``, ``V1Pod``, ``__version__``, ``dir()``, ``from ... import *``)
  first runs the real ``__init__`` into the same module object, once, and is then looked up there.
  From then on the module is the one a plain import gives.

Then it imports ``kubernetes_asyncio`` and its ``config`` package the ordinary way. The top-level
package is deliberately not deferred: its ``__init__`` imports ``config``, ``dynamic``, ``stream``,
``utils`` and ``watch`` in the order their circular imports rely on, and costs little once the
client's ``__init__`` is out of the way.

So other code in the process keeps working whatever it imports, before or after the runtime:
``from kubernetes_asyncio.client import CoreV1Api, V1Pod``, ``kubernetes_asyncio.watch.Watch``,
and ``ApiClient`` deserialising a model by name (it looks the class up on
``kubernetes_asyncio.client.models``) simply pay for the generated client when they first need
it. If kubernetes_asyncio or its client is already in ``sys.modules`` when this module is imported
(someone imported it first), nothing is deferred: the package is used as it is.

Thread safety: a deferred ``__init__`` runs at most once, under a lock; another thread that asks
the package for a name it does not have yet waits until the ``__init__`` has finished.

One difference remains visible: until something asks for a generated name, the package's
``__dict__`` (``vars(kubernetes_asyncio.client)``) lacks the generated names, because reading a
module's dict directly bypasses ``__getattr__``. Attribute access, ``from ... import``,
``import *``, ``dir()`` and ``getattr`` all behave as with a plain import.

Usage (inside ``runtime`` only; the names are kubernetes_asyncio's own):

>>> import asyncio, yaml
>>> from runtime._kube_credentials import Configuration, load_kube_config_from_dict
>>> with open(kubeconfig) as file:
...     document = yaml.safe_load(file)
>>> configuration = Configuration()
>>> _ = asyncio.run(load_kube_config_from_dict(document, client_configuration=configuration))
>>> configuration.host.startswith("https://")
True
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

CLIENT = "kubernetes_asyncio.client"
MODELS = "kubernetes_asyncio.client.models"

# What kubernetes_asyncio/client/__init__.py binds from its small modules, as name -> submodule.
# Served from the submodule so that the credential loaders, which import these, leave the rest
# of the __init__ (every API and model module) unrun.
_CLIENT_NAMES_FROM_SUBMODULES = {
    "ApiClient": "api_client",
    "Configuration": "configuration",
    "OpenApiException": "exceptions",
    "ApiTypeError": "exceptions",
    "ApiValueError": "exceptions",
    "ApiKeyError": "exceptions",
    "ApiAttributeError": "exceptions",
    "ApiException": "exceptions",
}

# One reentrant lock for every deferred __init__: the client's imports the models package, and
# one lock cannot be taken in two orders by two threads.
_init_lock = threading.RLock()


def _find_spec(name: str, path: Sequence[str] | None) -> importlib.machinery.ModuleSpec | None:
    """The spec the import system would use for ``name``, found without importing its parent."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = find_spec(name, path) if find_spec is not None else None
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


def _is_deferrable(spec: importlib.machinery.ModuleSpec | None) -> bool:
    """A package whose loader can run its ``__init__`` into a module object made beforehand."""
    return spec is not None and bool(spec.submodule_search_locations) and hasattr(spec.loader, "exec_module")


def _deferred_package(
    spec: importlib.machinery.ModuleSpec, names_from: Mapping[str, str]
) -> types.ModuleType:
    """The package of ``spec`` registered in ``sys.modules`` with its ``__init__`` deferred."""
    name = spec.name
    loader = spec.loader
    assert loader is not None
    module = importlib.util.module_from_spec(spec)
    state = {"initialised": False, "running": False}

    def run_init() -> None:
        with _init_lock:
            # Done, or this very thread is inside the __init__ (then the module is partly run, as
            # any module is while its __init__ imports).
            if state["initialised"] or state["running"]:
                return
            state["running"] = True
            try:
                loader.exec_module(module)
            finally:
                state["running"] = False
            state["initialised"] = True
            # From now on missing names raise AttributeError, as in any module.
            for hook_name, hook in hooks.items():
                if module.__dict__.get(hook_name) is hook:
                    del module.__dict__[hook_name]

    def __getattr__(attr: str) -> Any:
        if not state["initialised"]:
            source = names_from.get(attr)
            if source is not None:
                try:
                    value = getattr(importlib.import_module(f"{name}.{source}"), attr)
                except (ImportError, AttributeError):
                    pass  # Another kubernetes_asyncio layout: the real __init__ below knows better.
                else:
                    # Bound as the __init__ binds it, so the next lookup does not come here.
                    module.__dict__.setdefault(attr, value)
                    return value
            if attr.isidentifier() and not attr.startswith("__"):
                submodule = f"{name}.{attr}"
                if submodule in sys.modules or _find_spec(submodule, module.__path__) is not None:
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
    return module


def _defer_generated_client() -> bool:
    """Defer the client's and its models' ``__init__``; False when kubernetes_asyncio was imported already."""
    with _init_lock:
        if any(name in sys.modules for name in ("kubernetes_asyncio", CLIENT, MODELS)):
            return False
        package = _find_spec("kubernetes_asyncio", None)
        client = _find_spec(CLIENT, package.submodule_search_locations) if package else None
        models = _find_spec(MODELS, client.submodule_search_locations) if client else None
        if not (_is_deferrable(client) and _is_deferrable(models)):
            # Not an ordinary package on disk: let the plain imports below do what they always did.
            return False
        assert client is not None and models is not None
        client_module = _deferred_package(client, _CLIENT_NAMES_FROM_SUBMODULES)
        # The import system binds a submodule on its parent only when it loads it itself.
        client_module.models = _deferred_package(models, {})  # type: ignore[attr-defined]
        return True


deferred = _defer_generated_client()
"""Whether this import deferred the generated client (False: kubernetes_asyncio was imported before)."""

from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402
from kubernetes_asyncio.config import (  # noqa: E402
    ConfigException,
    load_incluster_config,
    load_kube_config_from_dict,
)

__all__ = [
    "ConfigException",
    "Configuration",
    "deferred",
    "load_incluster_config",
    "load_kube_config_from_dict",
]
