"""The sections of ``scripts/benchmark.py``, one module each (``settings``, ``data``,
``reference``, ``measure``, ``train``, ``encoder``, ``evaluate``, ``report``;
``benchmark_scale.py`` holds ``scale`` and ``answer``, ``benchmark_preprocess.py``
``preprocess``). Imported with ``scripts/`` on ``sys.path``, as the scripts run."""
