"""``folpipe test``: a workflow's own test cases (``tests.yaml``, ``tests/*.yaml``), recorded cases
replayed strictly, and ``folpipe test record``."""
