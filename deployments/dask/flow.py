"""Prefect entrypoint of this workflow folder (written by `folpipe deploy init`).

`prefect deploy` and workers load `flow.py:flow`; the folder is read again at every run.
"""

from pathlib import Path

from prefect_folpipe import folder_to_flow

flow = folder_to_flow(Path(__file__).parent)
