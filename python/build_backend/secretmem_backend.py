# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""The build backend of the Python binding (PEP 517), standard library only.

The binding is pure Python, so a wheel is a zip of python/secretmem/ with
a .dist-info directory (METADATA, WHEEL, RECORD, LICENSE): this module
writes it with zipfile, with no setuptools, no wheel package and nothing
from the network.  The metadata is the [project] table of pyproject.toml,
read by a parser of the small part of TOML that table uses (tomllib is
not in Python before 3.11); anything else in it is an error, and so is a
version other than secretmem.__version__.  pyproject.toml names it (backend-path), so that
`pip install ./python` works offline with any CPython 3.8+ and its pip; the
Debian package builds through it too (pybuild, python3-build), and so does
`make wheel`, which runs this file as a script:

    python3 python/build_backend/secretmem_backend.py wheel OUTDIR
    python3 python/build_backend/secretmem_backend.py sdist OUTDIR

Each prints the path of what it wrote.  The archives are reproducible:
every entry has the time of SOURCE_DATE_EPOCH (default 1980-01-01) and a
fixed mode, in a fixed order.
"""
import base64
import gzip
import hashlib
import io
import os
import re
import sys
import tarfile
import time
import zipfile

NAME = "secretmem"
TAG = "py3-none-any"

# python/ (this file is python/build_backend/secretmem_backend.py)
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _toml_value(text, pos):
    """(value, next position) of a TOML string, array or inline table at
    text[pos]: the subset pyproject.toml's [project] uses."""
    while text[pos] in " \t\n":
        pos += 1
    c = text[pos]
    if c == '"':
        end = text.index('"', pos + 1)
        value = text[pos + 1:end]
        if "\\" in value:
            raise ValueError("pyproject.toml: escapes in strings are not supported")
        return value, end + 1
    if c in "[{":
        close = "]" if c == "[" else "}"
        items = [] if c == "[" else {}
        pos += 1
        while True:
            while text[pos] in " \t\n,":
                pos += 1
            if text[pos] == close:
                return items, pos + 1
            if c == "[":
                value, pos = _toml_value(text, pos)
                items.append(value)
            else:
                m = re.compile(r"\s*([A-Za-z0-9_-]+)\s*=").match(text, pos)
                if not m:
                    raise ValueError(f"pyproject.toml: bad inline table at {text[pos:pos + 20]!r}")
                items[m.group(1)], pos = _toml_value(text, m.end())
    raise ValueError(f"pyproject.toml: unsupported value at {text[pos:pos + 20]!r}")


def project():
    """The [project] table of pyproject.toml as a dict."""
    with open(os.path.join(SRC, "pyproject.toml"), encoding="utf-8") as f:
        text = re.sub(r"(?m)^\s*#.*$", "", f.read())
    m = re.search(r"(?ms)^\[project\]\n(.*?)(?=^\[|\Z)", text)
    if not m:
        raise ValueError("pyproject.toml has no [project] table")
    body, pos, out = m.group(1) + "\n", 0, {}
    key = re.compile(r"\s*([A-Za-z0-9_-]+)\s*=")
    while body[pos:].strip():
        k = key.match(body, pos)
        if not k:
            raise ValueError(f"pyproject.toml: cannot parse {body[pos:pos + 30]!r}")
        out[k.group(1)], pos = _toml_value(body, k.end())
    return out


def version():
    """The version of pyproject.toml, which must be secretmem.__version__."""
    ver = project()["version"]
    with open(os.path.join(SRC, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m or m.group(1) != ver:
        raise ValueError(f"pyproject.toml says version {ver}, secretmem/__init__.py "
                         f"{m.group(1) if m else 'nothing'}")
    return ver


def _license_path():
    # in an sdist next to pyproject.toml; in the source tree at its top
    for path in (os.path.join(SRC, "LICENSE"), os.path.join(SRC, "..", "LICENSE")):
        if os.path.isfile(path):
            return path
    raise RuntimeError("LICENSE not found next to pyproject.toml nor one directory up")


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def metadata():
    """The METADATA (and PKG-INFO) text: core metadata 2.1 from [project],
    with the readme as the description."""
    p = project()
    if p["name"] != NAME:
        raise ValueError(f"pyproject.toml: name {p['name']}, not {NAME}")
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version()}",
             f"Summary: {p['description']}"]
    lines += [f"Author: {a['name']}" for a in p.get("authors", [])]
    lines += [f"License: {p['license']['text']}"]
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines += [f"Requires-Python: {p['requires-python']}", "Description-Content-Type: text/markdown"]
    readme = _read(os.path.join(SRC, p["readme"])).decode("utf-8")
    return "\n".join(lines) + "\n\n" + readme


def _package_files():
    """(path in the archive, path on disk) of the package, sorted."""
    out = []
    for name in sorted(os.listdir(os.path.join(SRC, NAME))):
        if name.endswith(".py") or name == "py.typed":
            out.append((f"{NAME}/{name}", os.path.join(SRC, NAME, name)))
    return out


def _date_time():
    epoch = max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)
    return time.gmtime(epoch)[:6], epoch


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 517: write the wheel into wheel_directory; its file name."""
    ver = version()
    distinfo = f"{NAME}-{ver}.dist-info"
    filename = f"{NAME}-{ver}-{TAG}.whl"
    entries = [(arc, _read(path)) for arc, path in _package_files()]
    entries.append((f"{distinfo}/METADATA", metadata().encode("utf-8")))
    entries.append((f"{distinfo}/WHEEL", (
        "Wheel-Version: 1.0\n"
        f"Generator: secretmem_backend ({ver})\n"
        "Root-Is-Purelib: true\n"
        f"Tag: {TAG}\n").encode()))
    entries.append((f"{distinfo}/LICENSE", _read(_license_path())))
    record = "".join(f"{arc},{_record_hash(data)},{len(data)}\n" for arc, data in entries)
    record += f"{distinfo}/RECORD,,\n"
    entries.append((f"{distinfo}/RECORD", record.encode()))
    date_time, _ = _date_time()
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, filename)
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(path + ".tmp", path)
    return filename


def build_sdist(sdist_directory, config_settings=None):
    """PEP 517: write the source archive into sdist_directory; its file name."""
    ver = version()
    base = f"{NAME}-{ver}"
    filename = f"{base}.tar.gz"
    files = [(f"{NAME}/{arc.split('/', 1)[1]}", path) for arc, path in _package_files()]
    files += [("pyproject.toml", os.path.join(SRC, "pyproject.toml")),
              ("README.md", os.path.join(SRC, "README.md")),
              ("LICENSE", _license_path()),
              ("build_backend/secretmem_backend.py", os.path.abspath(__file__))]
    _, epoch = _date_time()
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, filename)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        members = [("PKG-INFO", metadata().encode("utf-8"))] + [(arc, _read(p)) for arc, p in sorted(files)]
        for arc, data in members:
            info = tarfile.TarInfo(f"{base}/{arc}")
            info.size, info.mtime, info.mode = len(data), epoch, 0o644
            info.uname = info.gname = "root"
            tf.addfile(info, io.BytesIO(data))
    with open(path + ".tmp", "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=epoch) as gz:
        gz.write(raw.getvalue())
    os.replace(path + ".tmp", path)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    """PEP 517: nothing beyond the standard library."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """PEP 517: nothing beyond the standard library."""
    return []


def main(argv):
    if len(argv) != 3 or argv[1] not in ("wheel", "sdist"):
        print(f"usage: {argv[0]} wheel|sdist OUTDIR", file=sys.stderr)
        return 64
    build = build_wheel if argv[1] == "wheel" else build_sdist
    print(os.path.join(argv[2], build(argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
