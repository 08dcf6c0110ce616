"""etcd for the controllers: a small async client for the member API, health and alarms.

* :mod:`controllers.etcd.client`: :class:`~controllers.etcd.client.EtcdCluster` (the interface the
  controllers depend on) and :class:`~controllers.etcd.client.EtcdClient` (etcd's v3 JSON gateway
  over aiohttp), with typed errors such as :class:`~controllers.etcd.client.LearnerNotInSync`.

The real etcd member processes of development clusters are started by the local machine provider
(:mod:`providers.localmachine.etcd_process`), not here.
"""
