"""etcd for the controllers and the local machine provider: a small async client and a member supervisor.

* :mod:`controllers.etcd.client`: :class:`~controllers.etcd.client.EtcdCluster` (the interface the
  controllers depend on) and :class:`~controllers.etcd.client.EtcdClient` (etcd's v3 JSON gateway
  over aiohttp), with typed errors such as :class:`~controllers.etcd.client.LearnerNotInSync`.
* :mod:`controllers.etcd.binary`: :func:`~controllers.etcd.binary.find_etcd_binary`.
* :mod:`controllers.etcd.process`: :class:`~controllers.etcd.process.EtcdSupervisor`, which starts,
  joins, stops, pauses and re-attaches to real etcd member processes on loopback.
"""
