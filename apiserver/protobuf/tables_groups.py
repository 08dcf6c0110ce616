"""Field tables of the served kinds outside the core group.

coordination.k8s.io/v1 Lease, policy/v1 PodDisruptionBudget, events.k8s.io/v1 Event,
authentication.k8s.io/v1 SelfSubjectReview, TokenReview and TokenRequest, authorization.k8s.io/v1
SubjectAccessReview, rbac.authorization.k8s.io/v1 Role, ClusterRole and their bindings,
admissionregistration.k8s.io/v1 Mutating- and
ValidatingWebhookConfiguration, and autoscaling/v1 Scale (the body of a ``/scale`` PUT). The
notation is described in :mod:`apiserver.protobuf.schema`; messages shared with the core group
(ObjectReference, EventSource, EventSeries) are the core tables.
"""

from __future__ import annotations

TABLES: dict[str, str] = {
    "Lease": "1 metadata ObjectMeta; 2 spec LeaseSpec",
    "LeaseSpec": (
        "1 holderIdentity s?; 2 leaseDurationSeconds i?; 3 acquireTime MicroTime; 4 renewTime MicroTime;"
        " 5 leaseTransitions i?; 6 strategy s?; 7 preferredHolder s?"
    ),
    "PodDisruptionBudget": (
        "1 metadata ObjectMeta; 2 spec PodDisruptionBudgetSpec; 3 status PodDisruptionBudgetStatus"
    ),
    "PodDisruptionBudgetSpec": (
        "1 minAvailable IntOrString; 2 selector LabelSelector; 3 maxUnavailable IntOrString;"
        " 4 unhealthyPodEvictionPolicy s?"
    ),
    "PodDisruptionBudgetStatus": (
        "1 observedGeneration i; 2 disruptedPods {Time}; 3 disruptionsAllowed i!; 4 currentHealthy i!;"
        " 5 desiredHealthy i!; 6 expectedPods i!; 7 conditions Condition*"
    ),
    "EventsV1Event": (
        "1 metadata ObjectMeta; 2 eventTime MicroTime; 3 series EventSeries; 4 reportingController s;"
        " 5 reportingInstance s; 6 action s; 7 reason s; 8 regarding ObjectReference;"
        " 9 related ObjectReference; 10 note s; 11 type s; 12 deprecatedSource EventSource;"
        " 13 deprecatedFirstTimestamp Time; 14 deprecatedLastTimestamp Time; 15 deprecatedCount i"
    ),
    "SelfSubjectReview": "1 metadata ObjectMeta; 2 status SelfSubjectReviewStatus",
    "TokenReview": "1 metadata ObjectMeta; 2 spec TokenReviewSpec; 3 status TokenReviewStatus",
    "TokenReviewSpec": "1 token s; 2 audiences s*",
    "TokenReviewStatus": "1 authenticated b; 2 user UserInfo; 3 error s; 4 audiences s*",
    "TokenRequest": "1 metadata ObjectMeta; 2 spec TokenRequestSpec; 3 status TokenRequestStatus",
    "TokenRequestSpec": "1 audiences s*; 4 expirationSeconds i?; 3 boundObjectRef BoundObjectReference",
    "BoundObjectReference": "1 kind s; 2 apiVersion s; 3 name s; 4 uid s",
    "TokenRequestStatus": "1 token s!; 2 expirationTimestamp Time",
    "SubjectAccessReview": (
        "1 metadata ObjectMeta; 2 spec SubjectAccessReviewSpec; 3 status SubjectAccessReviewStatus"
    ),
    "SubjectAccessReviewSpec": (
        "1 resourceAttributes ResourceAttributes; 2 nonResourceAttributes NonResourceAttributes;"
        " 3 user s; 4 groups s*; 5 extra {ExtraValue}; 6 uid s"
    ),
    "ResourceAttributes": (
        "1 namespace s; 2 verb s; 3 group s; 4 version s; 5 resource s; 6 subresource s; 7 name s"
    ),
    "NonResourceAttributes": "1 path s; 2 verb s",
    "SubjectAccessReviewStatus": "1 allowed b!; 4 denied b; 2 reason s; 3 evaluationError s",
    "Role": "1 metadata ObjectMeta; 2 rules PolicyRule*",
    "ClusterRole": "1 metadata ObjectMeta; 2 rules PolicyRule*; 3 aggregationRule AggregationRule",
    "AggregationRule": "1 clusterRoleSelectors LabelSelector*",
    "PolicyRule": "1 verbs s*; 2 apiGroups s*; 3 resources s*; 4 resourceNames s*; 5 nonResourceURLs s*",
    "RoleBinding": "1 metadata ObjectMeta; 2 subjects Subject*; 3 roleRef RoleRef",
    "ClusterRoleBinding": "1 metadata ObjectMeta; 2 subjects Subject*; 3 roleRef RoleRef",
    "Subject": "1 kind s!; 2 apiGroup s; 3 name s!; 4 namespace s",
    "RoleRef": "1 apiGroup s!; 2 kind s!; 3 name s!",
    "SelfSubjectReviewStatus": "1 userInfo UserInfo",
    "UserInfo": "1 username s; 2 uid s; 3 groups s*; 4 extra {ExtraValue}",
    "MutatingWebhookConfiguration": "1 metadata ObjectMeta; 2 webhooks MutatingWebhook*",
    "MutatingWebhook": (
        "1 name s!; 2 clientConfig WebhookClientConfig; 3 rules RuleWithOperations*; 4 failurePolicy s?;"
        " 9 matchPolicy s?; 5 namespaceSelector LabelSelector; 11 objectSelector LabelSelector;"
        " 6 sideEffects s?; 7 timeoutSeconds i?; 8 admissionReviewVersions s*; 10 reinvocationPolicy s?;"
        " 12 matchConditions MatchCondition*"
    ),
    "ValidatingWebhookConfiguration": "1 metadata ObjectMeta; 2 webhooks ValidatingWebhook*",
    "ValidatingWebhook": (
        "1 name s!; 2 clientConfig WebhookClientConfig; 3 rules RuleWithOperations*; 4 failurePolicy s?;"
        " 9 matchPolicy s?; 5 namespaceSelector LabelSelector; 10 objectSelector LabelSelector;"
        " 6 sideEffects s?; 7 timeoutSeconds i?; 8 admissionReviewVersions s*;"
        " 11 matchConditions MatchCondition*"
    ),
    "RuleWithOperations": "1 operations s*; 2 ^rule Rule",
    "Rule": "1 apiGroups s*; 2 apiVersions s*; 3 resources s*; 4 scope s?",
    "WebhookClientConfig": "3 url s?; 1 service ServiceReference; 2 caBundle B",
    "ServiceReference": "1 namespace s!; 2 name s!; 3 path s?; 4 port i?",
    "MatchCondition": "1 name s!; 2 expression s!",
    "Scale": "1 metadata ObjectMeta; 2 spec ScaleSpec; 3 status ScaleStatus",
    "ScaleSpec": "1 replicas i",
    "ScaleStatus": "1 replicas i!; 2 selector s",
}
