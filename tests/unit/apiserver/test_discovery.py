"""Discovery documents compared with the recorded kube-apiserver transcripts (01-*, 22-openapi-*)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from apiserver import discovery
from apiserver.builtins import builtin_types
from apiserver.registry import Registry, ResourceType, ScaleSpec
from tests.support.reference import transcript_dir

REFERENCE = transcript_dir()


def body(case: str) -> Any:
    return json.loads((REFERENCE / f"{case}.json").read_text())["response"]["body"]


def gadget_type() -> ResourceType:
    crd = json.loads((REFERENCE / "02-crd-create.json").read_text())["response"]["body"]
    version = crd["spec"]["versions"][0]
    scale = version["subresources"]["scale"]
    return ResourceType(
        group=crd["spec"]["group"],
        version=version["name"],
        resource="gadgets",
        kind="Gadget",
        singular="gadget",
        namespaced=True,
        has_status=True,
        scale=ScaleSpec(scale["specReplicasPath"], scale["statusReplicasPath"], scale["labelSelectorPath"]),
        schema=version["schema"]["openAPIV3Schema"],
        storage_version_hash="QZtFdhLtWC4=",
    )


@pytest.fixture
def reg() -> Registry:
    registry = Registry()
    for rt in builtin_types():
        registry.add(rt)
    registry.add(gadget_type())
    return registry


def entries_by(items: list[Any], key: str) -> dict[str, Any]:
    return {item[key]: item for item in items}


def test_api_versions_matches_transcript_including_key_order() -> None:
    doc = discovery.api_versions("127.0.0.1:6443")
    assert doc == body("01-get-api")
    assert list(doc) == list(body("01-get-api"))


def test_version_info_has_the_recorded_shape_and_release_with_its_own_build() -> None:
    # The stand-in reports its own build identity: only the release and the shape match the recording.
    ours, recorded = discovery.version_info(), body("01-get-version")
    assert list(ours) == list(recorded)
    assert all(isinstance(value, str) for value in ours.values())
    assert (ours["major"], ours["minor"]) == (recorded["major"], recorded["minor"])
    assert re.fullmatch(r"v1\.32\.0\+cpo\.\d+\.\d+\.\d+", ours["gitVersion"])
    assert re.fullmatch(r"[0-9a-f]{40}", ours["gitCommit"]) and ours["gitCommit"] != recorded["gitCommit"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ours["buildDate"])


def test_core_resource_list_entries_match(reg: Registry) -> None:
    doc = discovery.api_resource_list(reg, "", "v1")
    assert doc is not None
    recorded = body("01-get-api-v1")
    assert list(doc) == ["kind", "groupVersion", "resources"]
    ours = entries_by(doc["resources"], "name")
    for entry in recorded["resources"]:
        assert ours[entry["name"]] == entry
        assert list(ours[entry["name"]]) == list(entry)


def test_crd_group_documents_match(reg: Registry) -> None:
    assert discovery.api_group(reg, "ref.example.dev") == body("01-get-apis-ref-group")
    assert discovery.api_resource_list(reg, "ref.example.dev", "v1") == body("01-get-apis-ref-v1")
    assert discovery.api_resource_list(reg, "coordination.k8s.io", "v1") == body(
        "01-get-apis-coordination-v1"
    )
    assert discovery.api_group(reg, "nope.example.dev") is None
    assert discovery.api_resource_list(reg, "ref.example.dev", "v2") is None


def test_group_list_order_and_entries(reg: Registry) -> None:
    doc = discovery.api_group_list(reg)
    recorded = body("01-get-apis")
    ours = entries_by(doc["groups"], "name")
    for group in recorded["groups"]:
        if group["name"] in ours:
            assert ours[group["name"]] == group
    names = [g["name"] for g in doc["groups"]]
    assert names.index("events.k8s.io") < names.index("coordination.k8s.io") < names.index("ref.example.dev")


def test_aggregated_discovery_entries_match(reg: Registry) -> None:
    core = discovery.aggregated_discovery(reg, core=True)
    recorded = body("01-get-api-aggregated-discovery")
    assert [k for k in core if k != "items"] == [k for k in recorded if k != "items"]
    ours = entries_by(core["items"][0]["versions"][0]["resources"], "resource")
    for entry in recorded["items"][0]["versions"][0]["resources"]:
        assert ours[entry["resource"]] == entry
    apis = discovery.aggregated_discovery(reg, core=False)
    ours_groups = {item["metadata"]["name"]: item for item in apis["items"]}
    for item in body("01-get-apis-aggregated-discovery")["items"]:
        if item["metadata"]["name"] in ("coordination.k8s.io", "ref.example.dev"):
            assert ours_groups[item["metadata"]["name"]] == item


def test_negotiation_prefers_aggregated_when_asked() -> None:
    kubectl = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    )
    assert discovery.negotiate_discovery(kubectl) == discovery.AGGREGATED_V2
    assert discovery.negotiate_discovery("application/json") == "application/json"
    assert discovery.negotiate_discovery(None) == "application/json"
    assert discovery.negotiate_discovery(discovery.AGGREGATED_V2BETA1) == discovery.AGGREGATED_V2BETA1


def strip_descriptions(value: Any) -> Any:
    """``value`` without any description text (a property that is *named* description stays)."""
    if isinstance(value, dict):
        return {
            k: strip_descriptions(v)
            for k, v in value.items()
            if not (k == "description" and isinstance(v, str))
        }
    if isinstance(value, list):
        return [strip_descriptions(v) for v in value]
    return value


def test_openapi_v3_group_document_matches_recording_apart_from_descriptions(reg: Registry) -> None:
    doc = discovery.openapi_v3_group_version(reg, "ref.example.dev", "v1")
    recorded = body("22-openapi-v3-ref-group")
    # Descriptions are left out of the comparison because, by project policy, ours are written
    # in our own words instead of copying kube-apiserver's. json.dumps keeps key order, so this
    # still checks the order of paths, operations, parameters and properties.
    assert json.dumps(strip_descriptions(doc)) == json.dumps(strip_descriptions(recorded))


def description_places(value: Any, where: str = "") -> list[str]:
    """Every position that carries a description, so the structure of ours can be compared."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "description" and isinstance(item, str):
                found.append(where)
            else:
                found.extend(description_places(item, f"{where}/{key}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(description_places(item, f"{where}/{index}"))
    return found


def test_openapi_v3_group_document_describes_the_same_places_as_the_recording(reg: Registry) -> None:
    doc = discovery.openapi_v3_group_version(reg, "ref.example.dev", "v1")
    recorded = body("22-openapi-v3-ref-group")
    assert description_places(doc) == description_places(recorded)


def test_openapi_v3_document_carries_only_referenced_schemas(reg: Registry) -> None:
    crd_doc = discovery.openapi_v3_group_version(reg, "ref.example.dev", "v1")
    lease_doc = discovery.openapi_v3_group_version(reg, "coordination.k8s.io", "v1")
    assert crd_doc is not None and lease_doc is not None
    micro_time = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
    assert micro_time not in crd_doc["components"]["schemas"]
    assert micro_time in lease_doc["components"]["schemas"]
    assert "io.k8s.api.autoscaling.v1.Scale" not in lease_doc["components"]["schemas"]
    get_lease = lease_doc["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"]["get"]
    assert get_lease["tags"] == ["coordination_v1"]
    assert get_lease["operationId"] == "readCoordinationV1NamespacedLease"


def test_openapi_root_lists_group_versions_with_hashes(reg: Registry) -> None:
    root = discovery.openapi_v3_root(reg)
    url = root["paths"]["apis/ref.example.dev/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/ref.example.dev/v1?hash=")
    assert "api/v1" in root["paths"] and "apis/coordination.k8s.io/v1" in root["paths"]
    assert "apis/coordination.k8s.io" in root["paths"]
    # kube-apiserver publishes a group document for built-in groups only
    assert "apis/ref.example.dev" not in root["paths"]
    for key in ("api", "apis", "version", ".well-known/openid-configuration", "openid/v1/jwks"):
        assert key in root["paths"]


def test_every_openapi_root_entry_is_served_with_its_hash(reg: Registry) -> None:
    for key, entry in discovery.openapi_v3_root(reg)["paths"].items():
        doc = discovery.openapi_v3_document(reg, key)
        assert doc is not None, key
        assert entry["serverRelativeURL"] == f"/openapi/v3/{key}?hash={discovery.etag(doc).strip(chr(34))}"
    assert discovery.openapi_v3_document(reg, "apis/ref.example.dev") is None
    assert discovery.openapi_v3_document(reg, "nope") is None
    group_doc = discovery.openapi_v3_document(reg, "apis/coordination.k8s.io")
    assert group_doc is not None
    assert group_doc["paths"]["/apis/coordination.k8s.io/"]["get"]["operationId"] == "getCoordinationAPIGroup"


def test_plain_api_document_names_the_listening_address(reg: Registry) -> None:
    doc = discovery.negotiate_document("application/json", "core", reg, "127.0.0.1:40123")
    assert doc["serverAddressByClientCIDRs"] == [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:40123"}
    ]
