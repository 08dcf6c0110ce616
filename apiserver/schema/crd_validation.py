"""A CustomResourceDefinition's validation as a whole: :func:`validate_crd`.

The spec (group, names, scope, versions, conversion), the stored versions in its status and the
``api-approved.kubernetes.io`` annotation, on create and on update (``old``).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from runtime.jsoncodec import JSON

from ..errors import FieldError, forbidden, invalid, not_supported, required
from ..objectmeta import dns1035_label_errors, dns1123_subdomain_errors
from .common import as_dict, as_list, as_str, is_zero
from .crd import (
    ALLOWED_AT_STATUS_ROOT,
    APPROVAL_ANNOTATION,
    IMMUTABLE,
    SCHEMA_FIELDS,
    default_crd,
    storage_version,
)
from .openapi_checks import (
    SchemaContext,
    column_errors,
    go_string_slice,
    go_struct,
    internal_spec,
    is_status_enabled,
    names_errors,
    openapi_schema_errors,
    schema_has,
    subresources_errors,
)
from .structural import defaults_errors, validate_structural


def _validation_errors(validation: Any, status_enabled: bool, path: str) -> list[FieldError]:
    """validateCustomResourceDefinitionValidation for one (per-version or hoisted) schema."""
    schema = as_dict(validation).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    errors: list[FieldError] = []
    root = f"{path}.openAPIV3Schema"
    if status_enabled:
        for go_name, key, _mode in SCHEMA_FIELDS:
            if is_zero(schema.get(key)):
                continue
            if go_name == "Type":
                if schema.get("type") != "object":
                    errors.append(
                        invalid(
                            f"{root}.type",
                            schema.get("type"),
                            'only "object" is allowed as the type at the root of the schema '
                            "if the status subresource is enabled",
                        )
                    )
                    break
                continue
            if go_name not in ALLOWED_AT_STATUS_ROOT:
                allowed = "[" + " ".join(ALLOWED_AT_STATUS_ROOT) + "]"
                errors.append(
                    invalid(
                        root,
                        go_struct("apiextensions.JSONSchemaProps"),
                        f"only {allowed} fields are allowed at the root of the schema "
                        "if the status subresource is enabled",
                    )
                )
                break
    if schema.get("nullable") is True:
        errors.append(forbidden(f"{root}.nullable", "nullable cannot be true at the root"))
    structural = validate_structural(schema, root)
    errors += structural if structural else defaults_errors(schema, root, is_root=True)
    errors += openapi_schema_errors(schema, root, SchemaContext(), is_root=True)
    return errors


def _deprecation_warning_errors(version: JSON, path: str) -> list[FieldError]:
    warning = version.get("deprecationWarning")
    if warning is None:
        return []
    if not version.get("deprecated"):
        return [invalid(f"{path}.deprecationWarning", warning, "can only be set for deprecated versions")]
    text = as_str(warning)
    problems: list[str] = []
    if len(text.encode()) > 256:
        problems.append("must be <= 256 characters long")
    if not text:
        problems.append("must not be an empty string")
    for index, char in enumerate(text):
        if not char.isprintable():
            problems.append(
                "must only contain printable UTF-8 characters; "
                f"non-printable character found at index {index}"
            )
            break
    return [invalid(f"{path}.deprecationWarning", warning, problem) for problem in problems]


def _webhook_url_errors(url: str, path: str) -> list[FieldError]:
    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(//([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$", url)
    if not match:
        return [invalid(path, url, "url must be a valid URL")]
    errors: list[FieldError] = []
    if match.group(1) != "https":
        errors.append(invalid(path, url, "'https' is the only allowed URL scheme"))
    authority = match.group(3) or ""
    if not authority.rsplit("@", 1)[-1]:
        errors.append(invalid(path, url, "host must be specified"))
    if "@" in authority:
        errors.append(invalid(path, url, "user information is not permitted in the URL"))
    if match.group(6):
        errors.append(invalid(path, url, "fragments are not permitted in the URL"))
    if match.group(5):
        errors.append(invalid(path, url, "query parameters are not permitted in the URL"))
    return errors


def _conversion_errors(conversion: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    strategy = as_str(conversion.get("strategy"))
    if not strategy:
        errors.append(required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errors.append(not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = as_dict(conversion.get("webhook"))
    client = webhook.get("clientConfig")
    versions = as_list(webhook.get("conversionReviewVersions"))
    if strategy == "Webhook":
        if not isinstance(client, dict):
            errors.append(required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
        else:
            url, service = client.get("url"), client.get("service")
            if (url is None) == (service is None):
                errors.append(
                    required(f"{path}.webhookClientConfig", "exactly one of url or service is required")
                )
            elif url is not None:
                errors += _webhook_url_errors(as_str(url), f"{path}.webhookClientConfig.url")
            else:
                errors += _webhook_service_errors(as_dict(service), f"{path}.webhookClientConfig.service")
        errors += _review_versions_errors(versions, f"{path}.conversionReviewVersions")
    else:
        if isinstance(client, dict):
            errors.append(
                forbidden(
                    f"{path}.webhookClientConfig", "should not be set when strategy is not set to Webhook"
                )
            )
        if versions:
            errors.append(
                forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errors


def _webhook_service_errors(service: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not as_str(service.get("name")):
        errors.append(required(f"{path}.name", "service name is required"))
    if not as_str(service.get("namespace")):
        errors.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append(
            invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
        )
    svc_path = service.get("path")
    if isinstance(svc_path, str) and svc_path and not svc_path.startswith("/"):
        errors.append(invalid(f"{path}.path", svc_path, "must start with a '/'"))
    return errors


def _review_versions_errors(versions: list[Any], path: str) -> list[FieldError]:
    if not versions:
        return [required(path)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, version in enumerate(versions):
        text = as_str(version)
        if text in seen:
            errors.append(invalid(f"{path}[{index}]", text, "duplicate version"))
            continue
        seen.add(text)
        errors += [invalid(f"{path}[{index}]", text, problem) for problem in dns1035_label_errors(text)]
    if not seen & {"v1", "v1beta1"}:
        errors.append(invalid(path, go_string_slice(versions), "must include at least one of v1, v1beta1"))
    return errors


def _spec_errors(spec: JSON, raw_spec: JSON) -> list[FieldError]:
    """validateCustomResourceDefinitionSpec on the internal form of a defaulted v1 spec."""
    errors: list[FieldError] = []
    group = as_str(spec.get("group"))
    if not group:
        errors.append(required("spec.group"))
    elif problems := dns1123_subdomain_errors(group):
        errors.append(invalid("spec.group", group, ",".join(problems)))
    elif len(group.split(".")) < 2:
        errors.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = as_str(spec.get("scope"))
    if not scope:
        errors.append(required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))

    internal = internal_spec(spec)
    has_top_schema = isinstance(as_dict(internal.validation).get("openAPIV3Schema"), dict)
    if not has_top_schema:
        for index, version in enumerate(internal.versions):
            if internal.hoisted_schema or not isinstance(
                as_dict(version.get("schema")).get("openAPIV3Schema"), dict
            ):
                errors.append(
                    required(f"spec.versions[{index}].schema.openAPIV3Schema", "schemas are required")
                )
    schemas = [as_dict(v.get("schema")).get("openAPIV3Schema") for v in internal.versions]
    if raw_spec.get("preserveUnknownFields") is True and any(
        schema_has(s, lambda node: node.get("default") is not None) for s in schemas
    ):
        errors.append(
            invalid(
                "spec.preserveUnknownFields", True, "must be false in order to use defaults in the schema"
            )
        )

    storage_count = 0
    names_seen: set[str] = set()
    unique = True
    any_status = is_status_enabled(internal.subresources) or any(
        is_status_enabled(v.get("subresources")) for v in internal.versions
    )
    for index, version in enumerate(internal.versions):
        name = as_str(version.get("name"))
        storage_count += 1 if version.get("storage") is True else 0
        unique = unique and name not in names_seen
        names_seen.add(name)
        path = f"spec.versions[{index}]"
        if problems := dns1035_label_errors(name):
            errors.append(invalid(f"{path}.name", name, ",".join(problems)))
        subresources = internal.subresources if internal.hoisted_subresources else version.get("subresources")
        errors += _deprecation_warning_errors(version, path)
        if not internal.hoisted_schema:
            errors += _validation_errors(
                version.get("schema"), is_status_enabled(subresources), f"{path}.schema"
            )
        if not internal.hoisted_subresources:
            errors += subresources_errors(version.get("subresources"), f"{path}.subresources")
        if not internal.hoisted_columns:
            for col_index, column in enumerate(as_list(version.get("additionalPrinterColumns"))):
                errors += column_errors(as_dict(column), f"{path}.additionalPrinterColumns[{col_index}]")
    versions_value = go_struct("[]apiextensions.CustomResourceDefinitionVersion")
    if not unique:
        errors.append(invalid("spec.versions", versions_value, "must contain unique version names"))
    if storage_count != 1:
        errors.append(
            invalid(
                "spec.versions", versions_value, "must have exactly one version marked as storage version"
            )
        )
    if internal.versions:
        # The internal form also carries the first version's name as spec.version.
        first = as_str(internal.versions[0].get("name"))
        if first and (problems := dns1035_label_errors(first)):
            errors.append(invalid("spec.version", first, ",".join(problems)))

    names = as_dict(spec.get("names"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not as_str(names.get(key)):
            errors.append(required(f"spec.names.{key}"))
    errors += names_errors(names, "spec.names")
    if internal.hoisted_schema:
        errors += _validation_errors(internal.validation, any_status, "spec.validation")
    if internal.hoisted_subresources:
        errors += subresources_errors(internal.subresources, "spec.subresources")
    if internal.hoisted_columns:
        for col_index, column in enumerate(internal.columns):
            errors += column_errors(as_dict(column), f"spec.additionalPrinterColumns[{col_index}]")
    conversion = as_dict(spec.get("conversion"))
    if conversion.get("strategy") not in (None, "None") and raw_spec.get("preserveUnknownFields") is True:
        errors.append(
            invalid(
                "spec.conversion.strategy",
                conversion.get("strategy"),
                "must be None if spec.preserveUnknownFields is true",
            )
        )
    errors += _conversion_errors(conversion, "spec.conversion")
    return errors


def _prepared_status(crd: JSON, old: JSON | None) -> JSON:
    """The status the strategy hands to validation: reset on create, carried over on update."""
    status = copy.deepcopy(as_dict(old.get("status"))) if old is not None else {}
    stored = list(as_list(status.get("storedVersions")))
    storage = storage_version(crd)
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored or None
    return status


def _stored_versions_errors(stored: list[Any] | None, versions: list[JSON], path: str) -> list[FieldError]:
    if not stored:
        return [invalid(path, go_string_slice(stored), "must have at least one stored version")]
    errors: list[FieldError] = []
    remaining = {as_str(v): index for index, v in enumerate(stored)}
    for version in versions:
        name = as_str(version.get("name"))
        if version.get("storage") is True and name not in remaining:
            errors.append(invalid(path, go_string_slice(stored), "must have the storage version " + name))
        remaining.pop(name, None)
    for name, index in sorted(remaining.items(), key=lambda item: item[1]):
        errors.append(
            invalid(
                f"{path}[{index}]",
                name,
                f"missing from spec.versions; {name} was previously a storage version, and must remain in "
                f"spec.versions until a storage migration ensures no data remains persisted in {name} and "
                f"removes {name} from status.storedVersions",
            )
        )
    return errors


def _approval_state(annotations: JSON) -> tuple[str, str]:
    base = f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}"'
    pr = "see https://github.com/kubernetes/enhancements/pull/1111"
    if APPROVAL_ANNOTATION not in annotations:
        return "missing", f"{base}, {pr}"
    value = as_str(annotations.get(APPROVAL_ANNOTATION))
    if value.startswith("unapproved"):
        return "bypassed", ""
    if re.match(r"^https?://[^/\s?#]+", value):
        return "approved", ""
    return "invalid", f'{base} with either a URL or a reason starting with "unapproved", {pr}'


def _api_approval_errors(crd: JSON, old: JSON | None) -> list[FieldError]:
    group = as_str(as_dict(crd.get("spec")).get("group"))
    protected = group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))
    if not protected:
        return []
    state, reason = _approval_state(as_dict(as_dict(crd.get("metadata")).get("annotations")))
    if (
        old is not None
        and _approval_state(as_dict(as_dict(old.get("metadata")).get("annotations")))[0] == state
    ):
        return []
    path = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [required(path, reason)]
    if state == "invalid":
        value = as_dict(as_dict(crd.get("metadata")).get("annotations")).get(APPROVAL_ANNOTATION)
        return [invalid(path, value, reason)]
    return []


def validate_crd(crd: JSON, *, old: JSON | None = None) -> list[FieldError]:
    """Validate an apiextensions.k8s.io/v1 CustomResourceDefinition on create (or update, given ``old``).

    Runs on the defaulted object (:func:`default_crd`) with the status the strategy would set, and
    reports paths the way the real server does, including the internal form's hoisting of a
    schema shared by all versions to ``spec.validation.openAPIV3Schema`` (22-crd-create-nonstructural).
    Covers the name rule ``<plural>.<group>`` (create only; the rest of metadata is validated
    elsewhere), group/scope/names, versions and the single storage version, schemas (structural
    invariants, defaults, OpenAPI restrictions, list/map extensions), subresources, printer
    columns, conversion, stored versions, API approval for protected groups and, on update, the
    immutable fields. CEL rules are checked for shape only, not compiled.
    """
    defaulted = default_crd(crd)
    spec = defaulted["spec"]
    raw_spec = as_dict(crd.get("spec"))
    errors: list[FieldError] = []
    if old is None:
        name = as_str(as_dict(crd.get("metadata")).get("name"))
        if name:
            problems = dns1123_subdomain_errors(name)
            if name != f"{as_str(spec['names'].get('plural'))}.{as_str(spec.get('group'))}":
                problems.append('must be spec.names.plural+"."+spec.group')
            errors += [invalid("metadata.name", name, problem) for problem in problems]
    errors += _spec_errors(spec, raw_spec)
    if old is not None:
        old_spec = default_crd(old)["spec"]
        if _is_established(old):
            for path, new_value, old_value in (
                ("spec.scope", spec.get("scope"), old_spec.get("scope")),
                ("spec.names.kind", spec["names"].get("kind"), old_spec["names"].get("kind")),
            ):
                if new_value != old_value:
                    errors.append(invalid(path, new_value, IMMUTABLE))
        for path, new_value, old_value in (
            ("spec.group", spec.get("group"), old_spec.get("group")),
            ("spec.names.plural", spec["names"].get("plural"), old_spec["names"].get("plural")),
        ):
            if new_value != old_value:
                errors.append(invalid(path, new_value, IMMUTABLE))
    status = _prepared_status(crd, old)
    errors += names_errors(as_dict(status.get("acceptedNames")), "status.acceptedNames")
    errors += _stored_versions_errors(
        status.get("storedVersions"), [as_dict(v) for v in spec["versions"]], "status.storedVersions"
    )
    errors += _api_approval_errors(crd, old)
    if raw_spec.get("preserveUnknownFields") is True and not (
        old is not None and as_dict(old.get("spec")).get("preserveUnknownFields") is True
    ):
        errors.append(
            invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    return errors


def _is_established(crd: JSON) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
        for c in as_list(as_dict(crd.get("status")).get("conditions"))
    )
