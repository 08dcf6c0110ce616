"""etcd for the controllers: the membership model, a small async client, its pool and TLS.

* :mod:`controllers.etcd.membership`: the one model of an etcd cluster both controllers read —
  members and their health, which Machine each belongs to, where to reach etcd — and the
  provider contract (the optional ``etcd.cpo.dev/*`` Machine annotations). The quorum
  arithmetic applied to it is :mod:`api.quorum`'s, which the webhooks share.
* :mod:`controllers.etcd.client`: :class:`~controllers.etcd.client.EtcdCluster` (the interface the
  controllers depend on) and :class:`~controllers.etcd.client.EtcdClient` (etcd's v3 JSON gateway
  over aiohttp), with typed errors such as :class:`~controllers.etcd.client.LearnerNotInSync`.
  A package: its calls (``cluster``), their HTTP transport (``transport``), ``errors``, ``results``
  and ``options`` are modules of their own, and the package exports all of them.
* :mod:`controllers.etcd.pool`: one client per ControlPlane, kept across passes.
* :mod:`controllers.etcd.tls`: the client certificate a ControlPlane names, as an SSL context.

The real etcd member processes of development clusters are started by the local machine provider
(:mod:`providers.localmachine.etcd_process`), and the quorum monitor of tests, benchmarks and the
demo is :mod:`demo.monitor`; the product imports neither.
"""
