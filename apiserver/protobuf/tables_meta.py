"""Field tables of ``meta.k8s.io/v1`` messages: what every object embeds (ObjectMeta and friends),
list metadata and the Status of errors.

The notation is described in :mod:`apiserver.protobuf.schema`. ``Time``, ``MicroTime``,
``Duration``, ``Quantity``, ``IntOrString``, ``RawExtension`` and ``FieldsV1`` have JSON forms of
their own and are decoded by the schema module, not by tables.
"""

from __future__ import annotations

TABLES: dict[str, str] = {
    "ObjectMeta": (
        "1 name s; 2 generateName s; 3 namespace s; 4 selfLink s; 5 uid s; 6 resourceVersion s;"
        " 7 generation i; 8 creationTimestamp Time; 9 deletionTimestamp Time;"
        " 10 deletionGracePeriodSeconds i?; 11 labels {s}; 12 annotations {s};"
        " 13 ownerReferences OwnerReference*; 14 finalizers s*; 17 managedFields ManagedFieldsEntry*"
    ),
    "OwnerReference": "5 apiVersion s; 1 kind s; 3 name s; 4 uid s; 6 controller b?; 7 blockOwnerDeletion b?",
    "ManagedFieldsEntry": (
        "1 manager s; 2 operation s; 3 apiVersion s; 4 time Time; 6 fieldsType s; 7 fieldsV1 FieldsV1;"
        " 8 subresource s"
    ),
    "LabelSelector": "1 matchLabels {s}; 2 matchExpressions LabelSelectorRequirement*",
    "LabelSelectorRequirement": "1 key s!; 2 operator s!; 3 values s*",
    "Condition": (
        "1 type s!; 2 status s!; 3 observedGeneration i; 4 lastTransitionTime Time; 5 reason s!; 6 message s!"
    ),
    "DeleteOptions": (
        "1 gracePeriodSeconds i?; 2 preconditions Preconditions; 3 orphanDependents b?;"
        " 4 propagationPolicy s?; 5 dryRun s*; 6 ignoreStoreReadErrorWithClusterBreakingPotential b?"
    ),
    "Preconditions": "1 uid s?; 2 resourceVersion s?",
    "ListMeta": "1 selfLink s; 2 resourceVersion s; 3 continue s; 4 remainingItemCount i?",
    "Status": "1 metadata ListMeta; 2 status s; 3 message s; 4 reason s; 5 details StatusDetails; 6 code i",
    "StatusDetails": "1 name s; 2 group s; 3 kind s; 6 uid s; 4 causes StatusCause*; 5 retryAfterSeconds i",
    "StatusCause": "1 reason s; 2 message s; 3 field s",
}
