"""Unpacking a repository's archive or an sdist: what Python's ``data`` filter refuses is
refused on a Python without extraction filters too (3.11.2, Debian 12's, has none)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from pytest_scorewright.verify.checkout import extract_safely


def _archive() -> io.BytesIO:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name in ("pkg/a.py", "../outside.py", "/absolute.py"):
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
        for name, target in (("pkg/escape", "../../etc/passwd"), ("pkg/alias", "a.py")):
            link = tarfile.TarInfo(name)
            link.type = tarfile.SYMTYPE
            link.linkname = target
            tar.addfile(link)
    data.seek(0)
    return data


def test_without_extraction_filters_nothing_leaves_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(tarfile, "data_filter", raising=False)
    dest = tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(fileobj=_archive()) as tar:
        extract_safely(tar, dest)
    found = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert found == ["pkg", "pkg/a.py", "pkg/alias"]
    assert not (tmp_path / "outside.py").exists()


@pytest.mark.skipif(not hasattr(tarfile, "data_filter"), reason="this Python has no filters")
def test_with_extraction_filters_an_escaping_member_is_refused(tmp_path: Path) -> None:
    with tarfile.open(fileobj=_archive()) as tar, pytest.raises(tarfile.FilterError):
        extract_safely(tar, tmp_path)
    assert not (tmp_path.parent / "outside.py").exists()
