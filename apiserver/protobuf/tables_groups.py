"""Field tables of the served kinds outside the core group.

coordination.k8s.io/v1 Lease, policy/v1 PodDisruptionBudget, events.k8s.io/v1 Event,
authentication.k8s.io/v1 SelfSubjectReview, admissionregistration.k8s.io/v1 Mutating- and
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
