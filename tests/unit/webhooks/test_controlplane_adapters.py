"""The CustomValidator / CustomDefaulter adapters: dispatch, Denied with 422, lookups only when needed."""

from __future__ import annotations

from typing import Any

import pytest

import runtime.webhook as webhook
from tests.unit.webhooks.test_controlplane import ODD, cp, scale
from webhooks.controlplane_admission import ControlPlaneDefaulter, ControlPlaneValidator


def request(operation: str, sub_resource: str = "", name: str = "cluster") -> Any:
    kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"} if sub_resource == "scale" else {
        "group": "controlplane.cpo.dev", "version": "v1alpha1", "kind": "ControlPlane"}  # fmt: skip
    return webhook.AdmissionRequest(
        uid="u1",
        kind=kind,
        resource={"group": "controlplane.cpo.dev", "version": "v1alpha1", "resource": "controlplanes"},
        sub_resource=sub_resource,
        operation=operation,
        name=name,
        namespace="ns",
        object=None,
        old_object=None,
        dry_run=False,
        user_info={},
        raw={},
    )


class Store:
    """A ControlPlane getter over a dict, counting lookups."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}
        self.lookups = 0

    async def __call__(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.lookups += 1
        return self.objects.get((namespace, name))


async def test_create_refusal_is_a_422_with_kubes_invalid_message() -> None:
    with pytest.raises(webhook.Denied) as caught:
        await ControlPlaneValidator().validate_create(cp(replicas=4), request("CREATE"))
    assert caught.value.code == 422 and caught.value.reason == "Invalid"
    assert caught.value.message == (
        f'ControlPlane.controlplane.cpo.dev "cluster" is invalid: spec.replicas: Invalid value: 4: {ODD}'
    )


async def test_valid_create_returns_the_warnings() -> None:
    validator = ControlPlaneValidator()
    assert await validator.validate_create(cp(replicas=3), request("CREATE")) == []
    warnings = await validator.validate_create(cp(replicas=9), request("CREATE"))
    assert len(warnings) == 1 and warnings[0].startswith("spec.replicas: 9 is more than")


async def test_update_checks_immutable_fields() -> None:
    with pytest.raises(
        webhook.Denied, match=r"spec\.etcd\.external: Invalid value: true: field is immutable"
    ):
        await ControlPlaneValidator().validate_update(cp(), cp(etcd={"external": True}), request("UPDATE"))


async def test_scale_uses_the_stored_controlplane_only_when_it_matters() -> None:
    store = Store(cp(etcd={"external": True}))
    validator = ControlPlaneValidator(store)
    assert await validator.validate_update(scale(3), scale(5), request("UPDATE", "scale")) == []
    assert store.lookups == 0
    assert await validator.validate_update(scale(3), scale(4), request("UPDATE", "scale")) == []
    assert store.lookups == 1


async def test_scale_of_a_stacked_or_unknown_controlplane_to_even_is_refused() -> None:
    for validator in (
        ControlPlaneValidator(Store(cp())),
        ControlPlaneValidator(Store()),
        ControlPlaneValidator(),
    ):
        with pytest.raises(webhook.Denied) as caught:
            await validator.validate_update(scale(3), scale(4), request("UPDATE", "scale"))
        assert caught.value.code == 422
        assert (
            caught.value.message
            == f'Scale.autoscaling "cluster" is invalid: spec.replicas: Invalid value: 4: {ODD}'
        )


async def test_delete_is_always_allowed() -> None:
    assert await ControlPlaneValidator().validate_delete(cp(replicas=4), request("DELETE")) == []


async def test_defaulter_defaults_the_object_but_not_a_scale() -> None:
    defaulter = ControlPlaneDefaulter()
    body: dict[str, Any] = {"spec": {"template": {"spec": {"providerSpec": {}}}}}
    await defaulter.default(body, request("CREATE"))
    assert body["spec"]["replicas"] == 1
    a_scale = scale(3)
    await defaulter.default(a_scale, request("UPDATE", "scale"))
    assert a_scale == scale(3)
