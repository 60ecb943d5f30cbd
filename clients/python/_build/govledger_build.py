"""The PEP 517 build backend of the govledger Python package.

It needs nothing but the standard library, so pip builds the package with
no build requirement to download: `pip install --no-index ./clients/python`
works offline in a fresh venv, with or without setuptools in it (Python
3.12 no longer puts setuptools in a new venv).

It reads the [project] table of pyproject.toml (the plain `key = "string"`
lines this package uses), writes a pure-Python wheel (py3-none-any) of
src/govledger, an editable wheel (PEP 660: a .pth file naming src/), and an
sdist. Archives are reproducible: entries sorted, every timestamp the
SOURCE_DATE_EPOCH given in the environment (else 1980-01-01), modes fixed.
"""

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "govledger"
_SDIST_FILES = ("pyproject.toml", "README.md")
_SDIST_DIRS = ("_build", "src", "tests")


def _project():
    """The [project] table's string values (name, version, ...)."""
    with open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table, values = None, {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[([A-Za-z0-9_.-]+)\]$", line)
        if m:
            table = m.group(1)
            continue
        if table != "project":
            continue
        m = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*"([^"\\]*)"$', line)
        if m:
            values[m.group(1)] = m.group(2)
        elif not re.match(r"^[A-Za-z0-9_-]+\s*=\s*\[\]$", line):
            raise ValueError("pyproject.toml line %d: the backend reads only key = \"string\" and key = [] in [project]" % n)
    for key in ("name", "version"):
        if key not in values:
            raise ValueError("pyproject.toml: [project] has no %s" % key)
    return values


def _epoch():
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if value:
        return max(int(value), 315532800)
    return 315532800  # 1980-01-01, the earliest time a zip entry can hold


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"].replace("-", "_"), p["version"])


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if "description" in p:
        lines.append("Summary: " + p["description"])
    if "requires-python" in p:
        lines.append("Requires-Python: " + p["requires-python"])
    if "license" in p:
        lines.append("License: " + p["license"])
    body = ""
    readme = p.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(_HERE, readme), encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _wheel_file():
    return b"Wheel-Version: 1.0\nGenerator: govledger_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _sources():
    """(archive name, path) of every file of the package, sorted."""
    root = os.path.join(_HERE, "src", _PACKAGE)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in filenames:
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(dirpath, name)
            arc = os.path.relpath(path, os.path.join(_HERE, "src")).replace(os.sep, "/")
            out.append((arc, path))
    return sorted(out)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(wheel_directory, files):
    """files: {archive name: bytes}; adds RECORD and returns the wheel's name."""
    p = _project()
    dist = _dist_info(p)
    files = dict(files)
    files[dist + "/METADATA"] = _metadata(p)
    files[dist + "/WHEEL"] = _wheel_file()
    record = [_record_line(name, files[name]) for name in sorted(files)]
    record.append(dist + "/RECORD,,")
    files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    name = "%s-%s-py3-none-any.whl" % (p["name"].replace("-", "_"), p["version"])
    stamp = time.gmtime(_epoch())[:6]
    # RECORD last, as the wheel spec recommends; the rest sorted.
    order = sorted(n for n in files if n != dist + "/RECORD") + [dist + "/RECORD"]
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n in order:
            info = zipfile.ZipInfo(n, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, files[n])
    return name


# -- PEP 517 hooks ------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    dist = _dist_info(p)
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    with open(os.path.join(metadata_directory, dist, "METADATA"), "wb") as f:
        f.write(_metadata(p))
    with open(os.path.join(metadata_directory, dist, "WHEEL"), "wb") as f:
        f.write(_wheel_file())
    return dist


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for arc, path in _sources():
        with open(path, "rb") as f:
            files[arc] = f.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = (os.path.join(_HERE, "src") + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, {"_govledger_editable.pth": pth})


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"].replace("-", "_"), p["version"])
    paths = [(n, os.path.join(_HERE, n)) for n in _SDIST_FILES]
    for d in _SDIST_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(_HERE, d)):
            dirnames[:] = sorted(x for x in dirnames if x != "__pycache__")
            for name in filenames:
                if not name.endswith((".pyc", ".pyo")):
                    path = os.path.join(dirpath, name)
                    paths.append((os.path.relpath(path, _HERE).replace(os.sep, "/"), path))
    name = base + ".tar.gz"
    mtime = _epoch()

    def add(tar, arc, data):
        info = tarfile.TarInfo(base + "/" + arc)
        info.size, info.mtime, info.mode = len(data), mtime, 0o644
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(data))

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        add(tar, "PKG-INFO", _metadata(p))
        for arc, path in sorted(paths):
            with open(path, "rb") as f:
                add(tar, arc, f.read())
    with open(os.path.join(sdist_directory, name), "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=mtime) as gz:
            gz.write(raw.getvalue())
    return name
