"""Admission webhooks of the operator, served by :mod:`runtime.webhook`.

* :mod:`webhooks.controlplane` — ControlPlane validation (odd replicas, maxSurge, immutable fields,
  the scale subresource) and defaulting.
* :mod:`webhooks.field` — kube-style field errors (:mod:`runtime.fielderrors`) with values printed as JSON.

Registration on a :class:`runtime.webhook.WebhookServer` (the operator passes the validator a
ControlPlane lookup through its manager's cache: ``getter_from_reader(manager.cache)``):

>>> from runtime.webhook import WebhookServer, WebhookServerOptions
>>> from webhooks.controlplane import ControlPlaneDefaulter, ControlPlaneValidator
>>> server = (
...     WebhookServer(WebhookServerOptions(port=0, cert_dir=str(tmp_path)))
...     .register_validator("controlplane.cpo.dev", "v1alpha1", "ControlPlane", ControlPlaneValidator())
...     .register_defaulter("controlplane.cpo.dev", "v1alpha1", "ControlPlane", ControlPlaneDefaulter())
... )

``await server.start()`` then serves them on ``/validate-controlplane-cpo-dev-v1alpha1-controlplane``
and ``/mutate-controlplane-cpo-dev-v1alpha1-controlplane``, the paths the webhook configurations
(``config/webhook``) name.
"""
