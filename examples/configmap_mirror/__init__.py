"""configmap-mirror: keeps a copy of every labelled ConfigMap, the runtime's "getting started".

See ``README.md`` beside this file, and :mod:`examples.configmap_mirror.mirror` for the code.
"""
