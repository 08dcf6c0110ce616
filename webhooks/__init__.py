"""Admission webhooks of the operator, served by :mod:`runtime.webhook`.

* :mod:`webhooks.controlplane` — ControlPlane validation (odd replicas, maxSurge, immutable fields,
  the scale subresource) and defaulting.
* :mod:`webhooks.field` — kube-style field errors (:mod:`runtime.fielderrors`) with values printed as JSON.

Registration (once ``runtime.webhook`` serves)::

    server.register_validator("controlplane.cpo.dev", "v1alpha1", "ControlPlane",
                              ControlPlaneValidator(getter_from_reader(manager.cache)))
    server.register_defaulter("controlplane.cpo.dev", "v1alpha1", "ControlPlane", ControlPlaneDefaulter())
"""
