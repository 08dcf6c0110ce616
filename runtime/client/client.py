"""The Kubernetes client: its constructors and the object verbs (CRUD, patch, subresources).

:class:`Client` builds on :class:`~runtime.client.watch.WatchClient` (the watch verbs) and
:class:`~runtime.client.mapping.MappedTransport` (where kinds live); see :mod:`runtime.client`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import yaml

from .._kube_credentials import (
    Configuration,
    load_incluster_config,
    load_kube_config_from_dict,
)
from ..jsoncodec import JSON

if TYPE_CHECKING:
    # Types only: importing pydantic costs an operator memory (docs/performance.md), and one that
    # passes plain dicts never needs it. At run time models are recognised by _is_model.
    from pydantic import BaseModel

from .objects import (
    PATCH_CONTENT_TYPES,
    M,
    ObjectList,
    PatchType,
    _identify,
    _is_model,
    _model_of,
    _out,
    _query,
)
from .options import ClientOptions
from .watch import WatchClient


class Client(WatchClient):
    """An async Kubernetes client over JSON dicts; build it with :meth:`from_kubeconfig`,
    :meth:`in_cluster` or :meth:`from_configuration`, and close it (``async with``) when done."""

    # ---------------------------------------------------------------------------- constructors

    @classmethod
    async def from_kubeconfig(
        cls,
        kubeconfig: Mapping[str, Any] | str | os.PathLike[str],
        *,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> Client:
        """A client for ``kubeconfig`` (a dict, or a path to a YAML file) and its ``context``."""
        if isinstance(kubeconfig, Mapping):
            document: JSON = json.loads(json.dumps(kubeconfig))
        else:
            loaded = yaml.safe_load(await asyncio.to_thread(Path(kubeconfig).read_text))
            if not isinstance(loaded, dict):
                raise ValueError(f"{kubeconfig}: not a kubeconfig document")
            document = loaded
        configuration = Configuration()
        # The loader mutates what it is given (exec results, temp-file paths): hand it a copy.
        await load_kube_config_from_dict(
            json.loads(json.dumps(document)), context=context, client_configuration=configuration
        )
        return cls(configuration, options, kubeconfig=document, context=context)

    @classmethod
    async def in_cluster(cls, options: ClientOptions | None = None) -> Client:
        """A client using the pod's service account (token reread as the kubelet rotates it)."""
        configuration = Configuration()
        load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return cls(configuration, options)

    @classmethod
    async def from_configuration(
        cls, configuration: Configuration, options: ClientOptions | None = None
    ) -> Client:
        """A client sharing an already loaded kubernetes_asyncio ``Configuration``."""
        return cls(configuration, options)

    @overload
    async def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON: ...
    @overload
    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, model: type[M]
    ) -> M: ...
    async def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        model: type[M] | None = None,
    ) -> JSON | M:
        """The object ``name``; raises :class:`~runtime.errors.NotFound` when it does not exist."""
        info = await self._resource(api_version, kind, namespace, name=True)
        return _out(await self.request_json("GET", info.path(namespace, name)), model)

    @overload
    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> JSON: ...
    @overload
    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        model: type[M],
    ) -> ObjectList[M]: ...
    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        model: type[M] | None = None,
    ) -> JSON | ObjectList[M]:
        """One LIST page (``namespace`` None: all namespaces). Without ``model``, the raw list dict
        (``items``, ``metadata.resourceVersion``, ``metadata.continue``); with it, an :class:`ObjectList`."""
        info = await self._resource(api_version, kind, namespace, name=False)
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
        )
        if continue_:
            query["continue"] = continue_
        listing = await self.request_json("GET", info.path(namespace), query=query)
        if model is None:
            return listing
        meta = listing.get("metadata") or {}
        return ObjectList(
            items=[model.model_validate(item) for item in listing.get("items") or []],
            resource_version=str(meta.get("resourceVersion", "")),
            continue_=str(meta.get("continue", "")),
            remaining_item_count=meta.get("remainingItemCount"),
            raw_metadata=dict(meta),
        )

    # ------------------------------------------------------------------------------ writes

    @overload
    async def create(self, obj: M, *, field_manager: str | None = None, dry_run: bool = False) -> M: ...
    @overload
    async def create(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> JSON: ...
    @overload
    async def create(
        self,
        obj: Mapping[str, Any],
        *,
        model: type[M],
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    async def create(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        model: type[M] | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON | M | BaseModel:
        """POST ``obj`` to its collection (namespace from ``metadata.namespace``); the stored object."""
        body, api_version, kind, _, namespace = _identify(obj)
        info = await self._resource(api_version, kind, namespace, name=False)
        created = await self.request_json(
            "POST", info.path(namespace), body=body, query=self._write_query(field_manager, dry_run)
        )
        return _out(created, _model_of(obj, model))

    @overload
    async def update(self, obj: M, *, field_manager: str | None = None, dry_run: bool = False) -> M: ...
    @overload
    async def update(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> JSON: ...
    @overload
    async def update(
        self,
        obj: Mapping[str, Any],
        *,
        model: type[M],
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    async def update(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        model: type[M] | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON | M | BaseModel:
        """PUT ``obj``; with ``metadata.resourceVersion`` set, a stale copy raises ``Conflict``."""
        return await self._put(obj, None, model, field_manager, dry_run)

    @overload
    async def update_status(
        self, obj: M, *, field_manager: str | None = None, dry_run: bool = False
    ) -> M: ...
    @overload
    async def update_status(
        self, obj: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> JSON: ...
    @overload
    async def update_status(
        self,
        obj: Mapping[str, Any],
        *,
        model: type[M],
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    async def update_status(
        self,
        obj: Mapping[str, Any] | BaseModel,
        *,
        model: type[M] | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON | M | BaseModel:
        """PUT ``obj`` to its ``status`` subresource (only ``status`` changes are kept)."""
        return await self._put(obj, "status", model, field_manager, dry_run)

    async def _put(
        self,
        obj: Mapping[str, Any] | BaseModel,
        subresource: str | None,
        model: type[M] | None,
        field_manager: str | None,
        dry_run: bool,
    ) -> JSON | M | BaseModel:
        body, api_version, kind, name, namespace = _identify(obj)
        if not name:
            raise ValueError(f"{kind}: update needs metadata.name")
        info = await self._resource(api_version, kind, namespace, name=True)
        updated = await self.request_json(
            "PUT",
            info.path(namespace, name, subresource),
            body=body,
            query=self._write_query(field_manager, dry_run),
        )
        return _out(updated, _model_of(obj, model))

    @overload
    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> JSON: ...
    @overload
    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
        model: type[M],
    ) -> M: ...
    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
        model: type[M] | None = None,
    ) -> JSON | M:
        """PATCH ``name`` with ``patch`` (a dict, a JSON-patch list, or a model for merge/apply).

        ``patch_type``: ``merge`` (RFC 7386), ``json`` (RFC 6902 operations), ``strategic``
        (built-in kinds only) or ``apply`` (server-side apply; needs a field manager, from here or
        :attr:`ClientOptions.field_manager`; ``force`` takes over conflicting fields).
        """
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}; use one of {sorted(PATCH_CONTENT_TYPES)}")
        if _is_model(patch):
            patch = patch.model_dump(by_alias=True, exclude_none=True, mode="json")
        manager = field_manager or self.options.field_manager
        if patch_type == "apply" and not manager:
            raise ValueError("server-side apply needs a field manager (field_manager= or ClientOptions)")
        query = _query(fieldManager=manager, force=force if patch_type == "apply" else None)
        if dry_run:
            query["dryRun"] = "All"
        info = await self._resource(api_version, kind, namespace, name=True)
        patched = await self.request_json(
            "PATCH",
            info.path(namespace, name, subresource),
            body=patch,
            query=query,
            content_type=content_type,
        )
        return _out(patched, model)

    async def patch_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> JSON:
        """:meth:`patch` on the ``status`` subresource."""
        return await self.patch(
            api_version,
            kind,
            name,
            patch,
            namespace,
            patch_type=patch_type,
            subresource="status",
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        preconditions: Mapping[str, str] | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """DELETE ``name``; the answer is the object (when finalizers delay it) or a ``Status``.

        ``preconditions``: ``{"uid": ..., "resourceVersion": ...}``; a mismatch raises ``Conflict``.
        """
        info = await self._resource(api_version, kind, namespace, name=True)
        options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if dry_run:
            options["dryRun"] = ["All"]
        return await self.request_json("DELETE", info.path(namespace, name), body=options)

    async def get_scale(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> JSON:
        """The ``autoscaling/v1`` ``Scale`` of ``name`` (``spec.replicas``, ``status.replicas``)."""
        info = await self._resource(api_version, kind, namespace, name=True)
        return await self.request_json("GET", info.path(namespace, name, "scale"))

    async def update_scale(
        self,
        api_version: str,
        kind: str,
        name: str,
        scale: Mapping[str, Any] | int,
        namespace: str | None = None,
    ) -> JSON:
        """PUT a ``Scale`` to ``name``'s scale subresource; an int means "set spec.replicas"."""
        info = await self._resource(api_version, kind, namespace, name=True)
        if isinstance(scale, int):
            body: JSON = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
                "spec": {"replicas": scale},
            }
        else:
            body = dict(scale)
        return await self.request_json("PUT", info.path(namespace, name, "scale"), body=body)

    def _write_query(self, field_manager: str | None, dry_run: bool) -> dict[str, str]:
        query = _query(fieldManager=field_manager or self.options.field_manager)
        if dry_run:
            query["dryRun"] = "All"
        return query
