"""Prometheus metrics (``pip install nexus-queues[metrics]``): the queues' figures, read from the database per scrape.

``include("nexus_queues.urls")`` serves them at ``metrics/``; :func:`~nexus_queues.contrib.prometheus.views.metrics`
is the view, to mount alone.
"""
