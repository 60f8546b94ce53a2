"""The sections of ``scripts/benchmark.py``, one module each (``settings``, ``data``,
``reference``, ``measure``, ``train``, ``encoder``, ``evaluate``, ``preprocessing``,
``report``; ``benchmark_scale.py`` holds the ``scale`` and ``answer`` sections).
Imported with ``scripts/`` on ``sys.path``, as the scripts run."""
