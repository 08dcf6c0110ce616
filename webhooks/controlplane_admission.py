"""The ControlPlane webhooks: the rules of :mod:`webhooks.controlplane` as the webhook server's
``CustomValidator`` and ``CustomDefaulter``.

:class:`ControlPlaneValidator` and :class:`ControlPlaneDefaulter` wrap the rules' pure functions;
a refusal is :class:`~runtime.webhook.Denied` with code 422 and kube's Invalid message, e.g.
``ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 4: must be
an odd number (1, 3, 5, 7) for a stacked etcd control plane``. The validator also reads what the
request does not carry: the existing Machines for the adoption rule (:mod:`webhooks.adoption`),
and the ControlPlane behind a write to its scale subresource.

The scale subresource
---------------------
For ``PUT``/``PATCH …/controlplanes/<name>/scale`` the API server sends an ``autoscaling/v1``
``Scale`` as ``object`` and ``oldObject`` (see the reference transcript
``16-wh-scale-put.json``) and calls only webhooks whose rules list ``controlplanes/scale``; the
webhook for ``controlplanes`` is *not* called when the new replica count is written through. So
the scale request itself must be checked, and whether etcd is external (and which maxSurge is in
force) is not in it. The validator therefore takes a lookup function (:data:`ControlPlaneGetter`,
typically backed by the manager's cache: :func:`getter_from_reader`). Reading a cache is safe
here because ``spec.etcd.external`` is immutable. The lookup is made only when the answer
depends on it (an even count, or fewer than 3); when the ControlPlane cannot be found, or no
lookup was given, the stacked-etcd rules apply: refusing an even count for an external-etcd
ControlPlane can be worked around by editing ``spec.replicas``, which the full validation checks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from api.controlplane import GROUP, KIND
from runtime.jsoncodec import JSON

from .adoption import (
    MachineLister,
    activates,
    adoption_errors,
    controlled_elsewhere,
    controlled_elsewhere_errors,
    counted_machines,
    existing_machines,
    machine_places,
    unlisted_domain_errors,
)
from .controlplane import (
    _mapping,
    default_controlplane,
    scale_needs_controlplane,
    validate_controlplane_create,
    validate_controlplane_scale,
    validate_controlplane_update,
)
from .field import FieldError, invalid_message

CONTROLPLANE_GROUP_KIND = f"{KIND}.{GROUP}"
SCALE_GROUP_KIND = "Scale.autoscaling"


class AdmissionRequestLike(Protocol):
    """The parts of ``runtime.webhook.AdmissionRequest`` these adapters read."""

    @property
    def sub_resource(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...


ControlPlaneGetter = Callable[[str, str], Awaitable[JSON | None]]
"""``async (namespace, name) -> ControlPlane dict or None when it does not exist``."""


class Reader(Protocol):
    """Anything with the client's ``get`` (the runtime Client, Cache or CachedClient)."""

    async def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON: ...


def getter_from_reader(reader: Reader) -> ControlPlaneGetter:
    """A :data:`ControlPlaneGetter` over a cache or client; NotFound becomes None."""
    from runtime.errors import NotFound

    async def get(namespace: str, name: str) -> JSON | None:
        try:
            return await reader.get(f"{GROUP}/v1alpha1", KIND, name, namespace)
        except NotFound:
            return None

    return get


def _denied(message: str, warnings: list[str]) -> Exception:
    from runtime.webhook import Denied

    return Denied(message, 422, warnings=warnings)


class ControlPlaneValidator:
    """``CustomValidator`` for ControlPlane and its scale subresource; refusals are 422 Invalid.

    ``list_machines`` reads the existing Machines for the adoption rule (:mod:`webhooks.adoption`);
    without it (tests of other rules) that rule is not checked.
    """

    def __init__(
        self, get_controlplane: ControlPlaneGetter | None = None, list_machines: MachineLister | None = None
    ) -> None:
        self.get_controlplane = get_controlplane
        self.list_machines = list_machines

    async def validate_create(self, obj: JSON, request: AdmissionRequestLike) -> list[str]:
        errors, warnings = validate_controlplane_create(obj)
        errors += await self._adoption_errors(None, obj, request, errors)
        return self._verdict(CONTROLPLANE_GROUP_KIND, _name(obj, request), errors, warnings)

    async def _adoption_errors(
        self, old: JSON | None, new: JSON, request: AdmissionRequestLike, errors: list[FieldError]
    ) -> list[FieldError]:
        """The adoption rules, checked only on a request otherwise valid (its selector well formed)
        that makes the ControlPlane Active (:func:`webhooks.adoption.activates`): no matched Machine
        controlled by another controller (:func:`webhooks.adoption.controlled_elsewhere_errors`),
        then replicas equal to the matched Machines (:func:`webhooks.adoption.adoption_errors`)
        and every matched Machine in a listed failure domain
        (:func:`webhooks.adoption.unlisted_domain_errors`), both reported when both fail."""
        spec = _mapping(new.get("spec"))
        old_spec = None if old is None else _mapping(old.get("spec"))
        if self.list_machines is None or errors or not activates(old_spec, spec):
            return []
        metadata = _mapping(new.get("metadata"))
        namespace = metadata.get("namespace") or request.namespace
        machines = await self.list_machines(namespace)
        counted = counted_machines(spec, machines)
        existing = existing_machines(spec, machines)
        foreign = controlled_elsewhere(spec, machines, metadata.get("uid") or None)
        activating = old is not None
        if foreign:
            adoptable = len(existing) - len(foreign)
            return controlled_elsewhere_errors(spec, foreign, adoptable, activating=activating)
        return adoption_errors(spec, existing, activating=activating) + unlisted_domain_errors(
            spec, machine_places(spec, counted), activating=activating
        )

    async def validate_update(self, old: JSON, new: JSON, request: AdmissionRequestLike) -> list[str]:
        if request.sub_resource == "scale" or new.get("kind") == "Scale":
            controlplane = None
            if self.get_controlplane is not None and scale_needs_controlplane(new):
                controlplane = await self.get_controlplane(request.namespace, _name(new, request))
            errors, warnings = validate_controlplane_scale(new, controlplane, old)
            return self._verdict(SCALE_GROUP_KIND, _name(new, request), errors, warnings)
        errors, warnings = validate_controlplane_update(old, new)
        errors += await self._adoption_errors(old, new, request, errors)
        return self._verdict(CONTROLPLANE_GROUP_KIND, _name(new, request), errors, warnings)

    async def validate_delete(self, obj: JSON, request: AdmissionRequestLike) -> list[str]:
        # Deleting releases the machines (the controller drops its ownerReferences): always allowed.
        return []

    @staticmethod
    def _verdict(kind_group: str, name: str, errors: list[FieldError], warnings: list[str]) -> list[str]:
        if errors:
            raise _denied(invalid_message(kind_group, name, errors), warnings)
        return warnings


class ControlPlaneDefaulter:
    """``CustomDefaulter`` for ControlPlane: :func:`default_controlplane` on the main resource only."""

    async def default(self, obj: JSON, request: AdmissionRequestLike) -> None:
        if request.sub_resource:
            return  # a Scale or status write carries no spec to default
        default_controlplane(obj)


def _name(obj: Mapping[str, Any], request: AdmissionRequestLike) -> str:
    name = _mapping(obj.get("metadata")).get("name")
    return name if isinstance(name, str) and name else request.name
