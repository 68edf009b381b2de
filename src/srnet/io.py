"""Atomic file writes: a reader never sees a half-written file, a failed write leaves no debris.

Files and folders are created with the permissions the umask gives (0644 / 0755 under umask
0022), not the owner-only ones of :mod:`tempfile`.  A write that fails for a reason outside srnet
(read-only folder, full disk, a path through a regular file) raises :class:`WriteError`, an
:class:`~srnet.errors.SrnetError` whose message is ``cannot write <path>: <reason>``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from srnet.errors import SrnetError


class WriteError(SrnetError):
    """Writing a file or folder failed (permissions, disk full, not a folder...)."""


def write_error(exc: BaseException, path: str | Path | None = None) -> WriteError:
    """One-line ``cannot write <path>: <reason>`` for an ``OSError`` (or a library's I/O error)."""
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else path
        reason = (exc.strerror or os.strerror(exc.errno)) if exc.errno else str(exc)
    else:  # e.g. safetensors' SafetensorError wrapping "No space left on device (os error 28)"
        where, reason = path, first_line(exc)
    return WriteError(f"cannot write {where}: {reason}")


_WRITE_ERRNOS = frozenset(
    getattr(errno, name) for name in
    ("EROFS", "ENOSPC", "EDQUOT", "EACCES", "EPERM", "ENOTDIR", "EISDIR", "EEXIST", "EFBIG")
    if hasattr(errno, name)
)


def describe_os_error(exc: OSError) -> str:
    """A one-line message for an ``OSError`` that reached the CLI: a write failure, or the path."""
    if exc.errno in _WRITE_ERRNOS:
        return str(write_error(exc))
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def is_write_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is an I/O failure of the system rather than a bug: OSError or an ``os error``."""
    return isinstance(exc, OSError) or "os error" in str(exc).lower()


def raise_as_write_error(exc: BaseException, path: str | Path) -> None:
    """Raise :class:`WriteError` naming ``path`` when ``exc`` is a system write failure
    (not already a one-line srnet error); return otherwise, so the caller re-raises ``exc``."""
    if is_write_failure(exc) and not isinstance(exc, SrnetError):
        raise write_error(exc, path) from None


def umask() -> int:
    """The process umask (read without changing it for longer than one call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def make_dirs(path: str | Path) -> Path:
    """``mkdir -p`` that fails with :class:`WriteError` (e.g. a path through a regular file)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:  # a regular file where a folder should be
        raise write_error(OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), exc.filename)) from None
    except OSError as exc:
        raise write_error(exc, path) from None
    return path


def refuse_existing(out: str | Path, overwrite: bool) -> None:
    """An existing ``out`` is replaced only with ``overwrite`` (checked before any work)."""
    if Path(out).exists() and not overwrite:
        raise SrnetError(f"{out}: already exists; pass --overwrite to replace it")


def check_creatable(folder: str | Path, field: str) -> None:
    """``folder`` can be created and written: no file on its path, and the nearest existing folder
    above it writable; one line starting with ``field`` otherwise (checked before any work)."""
    folder = Path(folder)
    for parent in [folder, *folder.parents]:
        if parent.exists():
            if not parent.is_dir():
                raise SrnetError(f"{field}: cannot create {folder}: {parent} is a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise SrnetError(f"{field}: cannot write in {parent} (permission denied)")
            return


def check_new_file(path: str | Path, overwrite: bool, field: str) -> None:
    """The file ``path`` can be written, before the work that produces it: not a folder, not an
    existing file unless ``overwrite``, in a folder that can be created."""
    path = Path(path)
    if path.is_dir():
        raise SrnetError(f"{field} {path}: is a folder; give a file name (e.g. {path / 'bench.json'})")
    refuse_existing(path, overwrite)
    check_creatable(path.parent, field)


def make_temp_dir(parent: str | Path, prefix: str, suffix: str) -> Path:
    """A fresh folder in ``parent`` (made if missing) with the umask's permissions (not 0700)."""
    make_dirs(parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
        tmp.chmod(0o777 & ~umask())
    except OSError as exc:
        raise write_error(exc, parent) from None
    return tmp


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    The file gets the umask's permissions; any failure removes the temporary file, and system
    failures (``OSError``, a library's ``os error``) become :class:`WriteError` naming ``path``.
    """
    path = Path(path)
    make_dirs(path.parent)
    tmp_path: Path | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        write(tmp_path)
        tmp_path.chmod(0o666 & ~umask())
        os.replace(tmp_path, path)
    except Exception as exc:
        raise_as_write_error(exc, path)
        raise
    finally:
        if tmp_path is not None and tmp_path.exists():
            tmp_path.unlink()
    return path


def atomic_folder(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_dir)`` and swap the finished folder into place of ``target``.

    A failure removes the half-written folder (so a rerun is not refused) and leaves ``target``
    as it was; system failures become :class:`WriteError`.
    """
    target = Path(target)
    tmp = make_temp_dir(target.parent, f".{target.name}.", ".tmp")
    try:
        write(tmp)
        follow_umask(tmp)
        if target.exists():
            old = make_temp_dir(target.parent, f".{target.name}.", ".old")
            os.replace(target, old / target.name)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except Exception as exc:
        raise_as_write_error(exc, target)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def follow_umask(folder: Path) -> None:
    """Give everything under ``folder`` the umask's permissions: a library that writes its files
    private (safetensors' 0600) would otherwise leave a checkpoint that another user cannot read."""
    mask = umask()
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def atomic_write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def atomic_write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write one JSON object per line atomically."""
    text = "".join(json.dumps(row, default=str) + "\n" for row in rows)
    return atomic_write_text(path, text)


MAX_YAML_NODES = 200_000
"""The most values a YAML document may expand to, aliases counted at every use: a recipe or sweep
is a few hundred; a 'billion laughs' of nested aliases is refused instead of filling memory."""
MAX_YAML_DEPTH = 50
"""The deepest a YAML document's lists and mappings may nest (aliases expanded): a recipe nests
about 5 deep; a thousand '[' would exhaust PyYAML's (and every later reader's) recursion."""
MAX_YAML_SIZE = 1_000_000
"""The longest YAML text (characters; a file's size in bytes) read: a sweep file is a few KB."""


@contextmanager
def set_aside(folder: Path | None, what: str, keep: Iterable[str] = ()) -> Iterator[None]:
    """Move ``folder``'s entries (all but ``keep``, e.g. the lock its owner holds for its whole
    life) into a hidden sibling while the block runs; delete them once the block succeeds, move
    them back if it fails or is interrupted (``--overwrite`` loses nothing until the new result
    exists; after a SIGKILL the old one is still in the sibling).  ``what`` names the contents in
    the message of an earlier interrupted call."""
    if folder is None or not folder.exists():
        yield
        return
    kept = folder.with_name(f".{folder.name}.previous")
    if kept.exists():
        raise SrnetError(f"an earlier --overwrite of {folder} was interrupted: {what} before it is kept in "
                         f"{kept}; move it back or delete it, then run again")
    staying = set(keep)
    kept.mkdir()
    for entry in [e for e in folder.iterdir() if e.name not in staying]:
        entry.rename(kept / entry.name)
    try:
        yield
    except BaseException:
        for entry in [e for e in folder.iterdir() if e.name not in staying]:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        for entry in kept.iterdir():
            entry.rename(folder / entry.name)
        kept.rmdir()
        raise
    shutil.rmtree(kept)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    _digest_file(digest, Path(path))
    return digest.hexdigest()


def folder_sha256(folder: str | Path) -> str:
    """The SHA-256 of a folder's files: each relative name then its bytes, in name order
    (``__pycache__`` left out)."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(folder).as_posix().encode())
        _digest_file(digest, path)
    return digest.hexdigest()


def file_manifest(folder: str | Path, exclude: tuple[str, ...] = ()) -> dict[str, str]:
    """Relative name -> SHA-256 of each file under ``folder``, in name order, but those whose name
    matches a glob of ``exclude``."""
    from fnmatch import fnmatch

    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*")
                   if p.is_file() and not any(fnmatch(p.name, pattern) for pattern in exclude))
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in files}


def _digest_file(digest: Any, path: Path) -> None:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def load_yaml(text: str, source: str) -> Any:
    """``yaml.safe_load`` of ``text`` (no code, no Python objects), refused in one line naming
    ``source`` when it is longer than :data:`MAX_YAML_SIZE`, nests deeper than
    :data:`MAX_YAML_DEPTH` (checked on the parser's events, before anything is built) or, its
    aliases expanded, holds more than :data:`MAX_YAML_NODES` values or nests deeper.  Invalid
    YAML raises ``yaml.YAMLError`` (:func:`read_yaml` turns it into one line)."""
    import yaml

    _check_size(len(text), "characters", source)
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):  # iterative: no recursion yet
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            _check_depth(depth, source)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    loaded = yaml.safe_load(text)
    count, stack = 0, [(loaded, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_YAML_NODES:
            raise SrnetError(f"{source}: YAML expands to more than {MAX_YAML_NODES:,} values (nested "
                             "aliases?); refused")
        if isinstance(node, dict | list):
            _check_depth(depth, source)
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return loaded


def read_yaml(path: str | Path) -> Any:
    """The YAML file ``path`` through :func:`load_yaml` (its size checked before it is read); one
    line naming the file (and the line at fault) when it is not UTF-8 text or not valid YAML."""
    import yaml

    path = Path(path)
    _check_size(path.stat().st_size, "bytes", str(path))
    try:
        return load_yaml(path.read_text(encoding="utf-8"), str(path))
    except UnicodeDecodeError:
        raise SrnetError(f"{path}: not a UTF-8 text file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or first_line(exc)
        raise SrnetError(f"{path}{line}: invalid YAML: {problem}") from None


def _check_size(size: int, unit: str, source: str) -> None:
    if size > MAX_YAML_SIZE:
        raise SrnetError(f"{source}: {size:,} {unit} of YAML; refused (the limit is {MAX_YAML_SIZE:,})")


def _check_depth(depth: int, source: str) -> None:
    if depth > MAX_YAML_DEPTH:
        raise SrnetError(f"{source}: YAML nested more than {MAX_YAML_DEPTH} levels deep; refused")


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """An exception's message as one line: its first line (cut to ``limit``), or its type's name
    when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__


def short(message: str, limit: int = 600) -> str:
    """``message`` cut to ``limit`` characters (an error line stays one readable line)."""
    return message if len(message) <= limit else f"{message[:limit]}… ({len(message):,} characters)"
