"""A storage block that folpipe treats as a remote store (S3, GCS, ...) but that keeps its
files in a local folder: a ``LocalFileSystem`` subclass, so not the plain local folder that
gets lock files. Tests of what runs sharing a storage block do use it where a bucket would be."""

from __future__ import annotations

from prefect.filesystems import LocalFileSystem


class FarFolder(LocalFileSystem):
    """A folder reached only through the block's ``read_path`` / ``write_path``."""

    _block_type_name = "folpipe test far folder"
    _block_type_slug = "folpipe-test-far-folder"
