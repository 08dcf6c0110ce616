"""The CRD structural-schema engine of the embedded API server.

Everything kube-apiserver does to a custom resource because of its CRD's ``openAPIV3Schema`` lives
here, as pure functions over decoded JSON:

* :func:`prune` drops fields the schema does not know and reports them the way the
  ``Warning: 299 - "unknown field \\"spec.bogus\\""`` headers and ``fieldValidation=Strict`` errors do;
* :func:`apply_defaults` drops non-nullable nulls and fills in ``default`` values;
* :func:`validate` is the OpenAPI validation, phrased exactly like kube-openapi + apiextensions
  (``spec.replicas in body should be greater than or equal to 1``), including update ratcheting;
* :func:`scale_accessor_errors` adds the causes the ``scale`` subresource contributes, and
  :func:`list_type_errors` the ``x-kubernetes-list-type`` set/map duplicates checked after them;
* :func:`validate_crd`, :func:`default_crd`, :func:`crd_to_resource_types`, :func:`crd_initial_status`
  and :func:`crd_established_status` cover the CustomResourceDefinition object itself.

>>> schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
...     "replicas": {"type": "integer", "minimum": 1, "default": 1}}}}}
>>> obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {}, "spec": {"bogus": 1}}
>>> prune(schema, obj)
['spec.bogus']
>>> apply_defaults(schema, obj); obj["spec"]
{'replicas': 1}
>>> obj["spec"]["replicas"] = 0
>>> [str(error) for error in validate(schema, obj)]
['spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1']

Value typing follows Go's view of decoded JSON: an integral literal (``2``) is an int64, anything
with a fraction or exponent (``2.0``) is a float64. Python's ``json`` module makes the same split,
which is why ``replicas: 2.0`` passes the schema's integer check yet fails the scale accessor.

The modules, by concern: :mod:`~.common` (schema accessors, Go value typing), :mod:`~.pruning`
(pruning and defaulting), :mod:`~.validation` (the OpenAPI validator, list-type and scale checks)
with the string-format table in :mod:`~.formats`, :mod:`~.crd` (a CRD's shape, defaults, status
and the resource types it defines), and the CRD's own validation: :mod:`~.openapi_checks` (each
schema node), :mod:`~.structural` (structural-schema invariants) and :mod:`~.crd_validation`
(the whole object). The package's interface is what it re-exports here; the modules' other
names are for each other.
"""

from __future__ import annotations

from ..builtin_types.table import storage_version_hash
from ..objectmeta import dns1035_label_errors, dns1123_subdomain_errors
from .common import go_json
from .crd import (
    crd_established_status,
    crd_initial_status,
    crd_to_resource_types,
    default_crd,
    order_schema,
    version_priority,
)
from .crd_validation import validate_crd
from .pruning import apply_defaults, drop_non_nullable_nulls, prune, unknown_field_message
from .structural import validate_structural
from .validation import list_type_errors, scale_accessor_errors, validate

__all__ = [
    "apply_defaults",
    "crd_established_status",
    "crd_initial_status",
    "crd_to_resource_types",
    "default_crd",
    "dns1035_label_errors",
    "dns1123_subdomain_errors",
    "drop_non_nullable_nulls",
    "go_json",
    "list_type_errors",
    "order_schema",
    "prune",
    "scale_accessor_errors",
    "storage_version_hash",
    "unknown_field_message",
    "validate",
    "validate_crd",
    "validate_structural",
    "version_priority",
]
