"""The embedded API server: a faithful stand-in for kube-apiserver, for tests, demos and benchmarks.

No kube-apiserver binary can be installed from the package registries this project reaches, so
the project carries its own. It is not a mock: clients talk real HTTPS to it, get real chunked
watch streams, and see the same status codes, Status messages, JSON shapes and key order as from
kube-apiserver v1.32 (the transcripts in ``tests/testdata/kube-apiserver`` are the spec, and
``tests/integration/test_reference_transcripts.py`` replays every one of them).

Starting one, and talking to it with the project's client:

>>> import asyncio
>>> from apiserver.server import EmbeddedAPIServer, EmbeddedServerOptions
>>> from runtime.client import Client
>>> async def main() -> None:
...     async with EmbeddedAPIServer(EmbeddedServerOptions(port=0)) as server:
...         kubeconfig = server.kubeconfig()      # cluster CA + admin bearer token
...         async with await Client.from_kubeconfig(kubeconfig) as client:
...             namespaces = await client.list("v1", "Namespace")
...             print([item["metadata"]["name"] for item in namespaces["items"]])
>>> asyncio.run(main())
['default', 'kube-node-lease', 'kube-public', 'kube-system']

or ``cpo dev-apiserver --kubeconfig-out PATH`` from a shell. Tests normally get it through
:class:`runtime.envtest.Environment`, which picks real binaries or an existing cluster instead
when the environment names one.

What it serves
--------------
* Discovery (``/api``, ``/apis``, aggregated discovery v2, ``/version``, ``/openapi/v3``) for the
  built-ins a controller uses -- namespaces, nodes, pods, events, secrets, configmaps, services,
  serviceaccounts, leases, poddisruptionbudgets, events.k8s.io events, CRDs, admission webhook
  configurations, RBAC Roles, ClusterRoles and their bindings, selfsubjectreviews, tokenreviews,
  subjectaccessreviews; deployments and networkpolicies, stored so that an install can be applied
  (nothing runs them) -- and every installed CRD.
* create / get / update / patch (merge, JSON, strategic for built-ins, apply) / delete /
  deletecollection with uid, generateName, generation, one global resourceVersion, optimistic
  concurrency, finalizers and deletionTimestamp, preconditions, dryRun, fieldValidation and
  managedFields bookkeeping; ``status`` and ``scale`` subresources.
* list with label and field selectors and ``limit``/``continue``; watch from a resourceVersion
  (bounded history, 410 Expired past it), bookmarks, ``timeoutSeconds``, watch-list initial events.
* CRD installation with structural-schema pruning, defaulting and validation.
* Pods as kube-apiserver keeps them without a kubelet: the ServiceAccount admission plugin's
  rules for mirror Pods and the Priority plugin's (the two system PriorityClasses), and graceful
  deletion of a Pod bound to a Node (marked for its grace period; a DELETE with grace 0 removes
  it, as its kubelet does).
* Validating and mutating admission webhooks called over TLS with the configured ``caBundle``,
  in kube-apiserver's order: mutating webhooks (each non-empty patch is defaulted again), then
  validation of the result, then validating webhooks.
* Identities and access: the admin token (``system:masters``), client certificates signed by its
  CA, and service-account tokens, minted with ``POST .../serviceaccounts/<name>/token`` (``kubectl
  create token``) or :meth:`EmbeddedAPIServer.service_account_token`. ``TokenReview`` says whose a
  token is; ``SubjectAccessReview`` evaluates the stored RBAC objects (:mod:`apiserver.rbac`).
  RBAC is enforced on the requests of the identities named with
  :meth:`EmbeddedAPIServer.enforce_rbac` (or all but the admin with
  ``EmbeddedServerOptions.enforce_rbac``), and :meth:`EmbeddedAPIServer.record_access` records
  every (verb, group, resource, subresource, namespace) one identity asks for.
* Table, PartialObjectMetadata and YAML representations for kubectl.
* Request bodies in JSON, YAML and -- for the built-ins, as Go clients (kubectl's typed commands,
  client-go, controller-runtime) send them -- protobuf (``protobuf``; not for CRDs, which answer
  415 naming JSON and YAML).
* Answers negotiated on the ``Accept`` header as kube-apiserver negotiates them: the first type
  it can serve wins, so client-go's ``application/vnd.kubernetes.protobuf,application/json`` gets
  protobuf for the built-ins with a protobuf table (objects, lists, Status errors, and watch
  streams of length-prefixed frames) and JSON for custom resources.

What it deliberately does not do (as with controller-runtime's envtest)
----------------------------------------------------------------------
* No garbage collector: ownerReferences are stored, nothing cascades; ``Orphan``/``Foreground``
  deletions leave their finalizer in place until a client removes it.
* No namespace controller: a deleted namespace stays Terminating until ``/finalize`` clears its
  ``spec.finalizers``; the objects inside are not removed.
* No kubelet, scheduler or controllers of any kind (so no ClusterRole aggregation either). RBAC
  is off unless asked for (see above): every authenticated user may do everything; anonymous
  requests may read only ``/version`` and the health endpoints.
* No protobuf bodies for custom resources (kube-apiserver cannot decode them either), no
  protobuf Tables or PartialObjectMetadata (those clauses are passed over for the client's JSON
  one), no CBOR, and HTTP/1.1 only.

Modules: ``server`` (HTTP, auth, routing), ``handlers`` (verbs), ``store`` (objects, versions,
watch fan-out), ``registry`` (served types), ``builtins`` (what the handlers ask of a built-in type)
over the per-type tables of ``builtin_types`` and the Go struct description language of
``gostruct``, ``schema`` (the CRD structural-schema engine), ``objectmeta``, ``selectors``,
``patch``, ``decode`` (bodies; ``protobuf`` for protobuf ones), ``discovery``, ``tables``,
``admission``, ``rbac`` (who may do what) and ``reviews`` (TokenReview, SubjectAccessReview,
TokenRequest), ``errors`` (kube's wording, on :mod:`runtime.fielderrors` and
:mod:`runtime.goformat`).
"""

from .server import EmbeddedAPIServer, EmbeddedServerOptions

__all__ = ["EmbeddedAPIServer", "EmbeddedServerOptions"]
