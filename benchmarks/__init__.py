"""prefect_folpipe's benchmarks: ``python -m benchmarks`` (see benchmarks/README.md).

``scenarios.yaml`` is the table of what runs: each scenario's shape, size, model latency,
repetitions and the baselines it is set beside (hand-written Prefect flows of the same shape,
the ideal, a floor). Modules: ``table`` reads it, ``kinds`` measures one scenario, ``measure``
times runs and waits for the server, ``report`` prints the rows, ``server`` / ``postgres`` start
a Prefect server of the benchmark's own; ``workflows`` / ``trees`` write the folders and
``handwritten`` holds the hand-written flows.
"""
