"""The file system a files root lives on: pyarrow's own (local, s3, gcs, hdfs), else fsspec's.

``open_root("/data/lake")`` or ``open_root("s3://bucket/lake")`` gives a pyarrow ``FileSystem``
and the root's path on it; everything else in the files system goes through that pair, so the
readers and the writer never care where the files are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow.fs as pafs

from samza_dagster.config.errors import ConfigError


@dataclass(frozen=True)
class FileRoot:
    fs: pafs.FileSystem
    #: the root's path on ``fs`` (no trailing slash)
    path: str

    def join(self, *parts: str) -> str:
        return "/".join([self.path.rstrip("/"), *(p.strip("/") for p in parts if p)])


def open_root(root: str, key: str) -> FileRoot:
    """The file system and path of ``root``; ConfigError naming ``key`` when no file system
    (pyarrow's or an installed fsspec implementation) opens it."""
    if "://" not in root:
        return FileRoot(pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(root)).replace(os.sep, "/"))
    try:
        fs, path = pafs.FileSystem.from_uri(root)
        return FileRoot(fs, path.rstrip("/") or "/")
    except Exception:  # noqa: BLE001 - pyarrow does not know the scheme (or its driver is absent): try fsspec
        pass
    try:
        import fsspec.core

        ffs, path = fsspec.core.url_to_fs(root)
    except Exception as exc:  # noqa: BLE001 - any failure to open the URL is one config error
        raise ConfigError(f"config key {key!r}: neither pyarrow nor fsspec opens {root!r}: {exc}", key=key) from None
    return FileRoot(pafs.PyFileSystem(pafs.FSSpecHandler(ffs)), str(path).rstrip("/"))
