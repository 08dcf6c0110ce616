"""Admission webhooks of the operator, served by :mod:`runtime.webhook`.

* :mod:`webhooks.controlplane` — ControlPlane validation (odd replicas, maxSurge, immutable fields,
  the scale subresource) and defaulting, as pure functions.
* :mod:`webhooks.controlplane_selector` — the ControlPlane selector's rules: well formed, matching
  the template, and requiring the control-plane role label the operator's cache is limited to.
* :mod:`webhooks.adoption` — ``spec.state`` and a ControlPlane created over existing Machines.
* :mod:`webhooks.controlplane_admission` — the ControlPlane rules as the webhook server's
  validator and defaulter, with the lookups the request does not carry (Machines, the
  ControlPlane behind a Scale).
* :mod:`webhooks.machinehealthcheck` — MachineHealthCheck validation.
* :mod:`webhooks.field` — kube-style field errors (:mod:`runtime.fielderrors`) with values printed as JSON.

Registration on a :class:`runtime.webhook.WebhookServer` (the operator passes the validator a
ControlPlane lookup through its manager's cache: ``getter_from_reader(manager.cache)``):

>>> from runtime.webhook import WebhookServer, WebhookServerOptions
>>> from webhooks.controlplane_admission import ControlPlaneDefaulter, ControlPlaneValidator
>>> server = (
...     WebhookServer(WebhookServerOptions(port=0, cert_dir=str(tmp_path)))
...     .register_validator("controlplane.cpo.dev", "v1alpha1", "ControlPlane", ControlPlaneValidator())
...     .register_defaulter("controlplane.cpo.dev", "v1alpha1", "ControlPlane", ControlPlaneDefaulter())
... )

``await server.start()`` then serves them on ``/validate-controlplane-cpo-dev-v1alpha1-controlplane``
and ``/mutate-controlplane-cpo-dev-v1alpha1-controlplane``, the paths the webhook configurations
(``config/webhook``) name.
"""
