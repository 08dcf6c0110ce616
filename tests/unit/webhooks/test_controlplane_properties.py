"""Properties of the admission functions: no input crashes them, and they agree with the models and CRD."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from api import CONTROLPLANE_CRD, ControlPlaneSpec
from api.crdgen import crd_for
from webhooks.controlplane import (
    default_controlplane,
    validate_controlplane_create,
    validate_controlplane_scale,
    validate_controlplane_update,
)
from webhooks.field import FieldError

# The keys the rules look at, at any depth, so malformed values reach every branch.
NESTED_KEYS = st.sampled_from(
    ["name", "key", "operator", "values", "matchLabels", "matchExpressions", "type", "rollingUpdate",
     "maxSurge", "external", "metadata", "labels", "spec", "In", "Exists"]
)  # fmt: skip
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10)
    | st.sampled_from(["", "a", "US_East", "RollingUpdate", "0"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(NESTED_KEYS, children, max_size=3),
    max_leaves=8,
)
SPEC_KEYS = [
    "replicas",
    "selector",
    "template",
    "failureDomains",
    "strategy",
    "etcd",
    "enableAutorepair",
    "paused",
]
specs = st.dictionaries(st.sampled_from(SPEC_KEYS), json_values, max_size=6) | json_values
objects = st.fixed_dictionaries({"metadata": st.just({"name": "x"}), "spec": specs})


@settings(max_examples=1500, deadline=None)
@given(objects, objects)
def test_no_input_makes_the_rules_raise(old: dict[str, Any], new: dict[str, Any]) -> None:
    for obj in (old, new):
        errors, warnings = validate_controlplane_create(obj)
        assert all(isinstance(e, FieldError) and str(e).startswith("spec") for e in errors)
        assert all(isinstance(w, str) for w in warnings)
    validate_controlplane_update(old, new)
    defaulted = copy.deepcopy(new)
    default_controlplane(defaulted)
    validate_controlplane_create(defaulted)
    validate_controlplane_scale({"spec": new["spec"]} if isinstance(new["spec"], dict) else {}, new)


@settings(max_examples=200, deadline=None)
@given(st.integers(-3, 12), st.booleans(), st.sampled_from([0, 1]))
def test_accepted_objects_parse_as_models(replicas: int, external: bool, surge: int) -> None:
    obj: dict[str, Any] = {
        "spec": {
            "replicas": replicas,
            "etcd": {"external": external},
            "strategy": {"rollingUpdate": {"maxSurge": surge}},
            "template": {"spec": {"providerSpec": {"value": {}}}},
        }
    }
    default_controlplane(obj)
    errors, _ = validate_controlplane_create(obj)
    if not errors:
        spec = ControlPlaneSpec.from_dict(obj["spec"])
        assert spec.replicas >= 1 and (external or spec.replicas % 2 == 1)
        assert spec.replicas >= 3 or surge == 1


def test_webhook_model_and_crd_defaults_agree() -> None:
    obj: dict[str, Any] = {"spec": {"template": {"spec": {"providerSpec": {}}}}}
    default_controlplane(obj)
    schema = crd_for(CONTROLPLANE_CRD)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    crd_spec = schema["properties"]["spec"]["properties"]
    model = ControlPlaneSpec.model_validate({"template": obj["spec"]["template"]})
    for key, attr in (
        ("replicas", "replicas"),
        ("selector", "selector"),
        ("strategy", "strategy"),
        ("enableAutorepair", "enable_autorepair"),
    ):
        wire_model = model.model_dump(mode="json", by_alias=True, exclude_none=True)[key]
        assert obj["spec"][key] == crd_spec[key]["default"] == wire_model, key
        assert getattr(model, attr) is not None
