"""Deployment of workflow folders: ``prefect deploy`` projects, the API, ``serve``, status,
dependencies and the Dask scale-out runner.

Prefect-free modules: ``options``, ``project``, ``dependencies``, ``signature``, ``steps``.
Prefect-bound (imported lazily by the CLI): ``api``, ``serve``, ``status``, ``dask``.
"""
