"""The built-in types of the kube-apiserver stand-in, one table per concern.

Each built-in resource the embedded server serves (Namespaces, ConfigMaps, Secrets, Events,
Leases, Nodes, Pods, Services, PodDisruptionBudgets, webhook configurations, CRDs, ...) is
described by data, not by code paths in the handlers:

* :mod:`~apiserver.builtin_types.structs` -- the Go struct layout of each type, in the
  description language of :mod:`apiserver.gostruct` (key order, omitempty, list semantics);
  :mod:`~apiserver.builtin_types.workloads` -- Deployment and NetworkPolicy, stored for installs;
* :mod:`~apiserver.builtin_types.validation` -- each type's validation, with kube's field errors;
* :mod:`~apiserver.builtin_types.defaulting` -- scheme defaults, and what a type's strategy sets
  on create and update; :mod:`~apiserver.builtin_types.pod_admission` -- the ServiceAccount
  (mirror Pods) and Priority admission plugins on a Pod's create;
* :mod:`~apiserver.builtin_types.events` -- the two Event APIs (core/v1 and events.k8s.io/v1)
  sharing one store;
* :mod:`~apiserver.builtin_types.table` -- :func:`builtin_types`, the list of types the server
  registers (scope, verbs, short names, the rules above);
* :mod:`~apiserver.builtin_types.initial` -- what a fresh server holds, and the SelfSubjectReview
  answer.

To serve one more built-in type: describe its struct in ``structs``, add its validation and
defaulting if it has any, and register it in ``table``. :mod:`apiserver.builtins` is the
machinery the handlers use on top of these tables.
"""
