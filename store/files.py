"""Storage access for the store: a root on a local disk or in object storage, via pyarrow.

Every file appears whole or not at all:
- local disk: bytes go to a hidden temporary sibling (``.tmp.<token>.<name>``), are fsynced
  (unless ``durable=False``), then ``os.replace`` puts them at their name in one atomic step;
- object storage (s3, gcs, abfs): the object is sent in one request (a single PUT for S3 with
  ``allow_delayed_open``, which ``open_root`` sets), and an object only becomes visible once its
  upload completes;
- any other pyarrow filesystem: temporary name, then ``move``.

An S3 store opened from its URI fails fast when its endpoint is gone: short connect and request
timeouts and a few attempts per request (``S3_TIMEOUTS``, each overridable by an environment
variable), instead of pyarrow's defaults (about 6 s per request to a closed port).

Those timeouts only count the gap between two bytes: an endpoint that trickles a byte every
0.3 s would hold a call for ever. So every call to a filesystem other than the local disk has a
total deadline (``EXPLORER_STORE_DEADLINE_S``, ``store_deadline_s``) and runs in a helper thread
while the main thread waits in Python (``interrupt.stoppable``): a signal ends the command at
once, and a call past its deadline is ``StoreUnreachable``. A URI's scheme must be one that is
supported and tested (``SCHEMES``); any other is refused before pyarrow is asked (pyarrow's
gs:// waits about 19 minutes for a metadata server without a network, and hdfs:// loads a JVM).

Size: every way a byte reaches or leaves the store (list, read, whole and streamed writes,
move, delete, exclusive create), each under the same atomicity and deadline rules.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import StoreError, StoreUnreachable
from .interrupt import WorkExpired, stoppable
from .layout import join, temporary_path
from .owners import writer_token
from .redaction import redact_uri

_OBJECT_STORES = ("s3", "gcs", "abfs")

# How an S3 store opened from its URI talks to its endpoint: environment variable -> (default,
# what it sets). A dead endpoint (connection refused) then fails a request in about 1 s, a
# hanging one in about 3 x 3 s; a live one that answers slowly (a large upload) is not cut,
# since the request timeout is the longest wait for the next byte, not the whole transfer.
# Each value is bounded above too: an endless timeout (inf, 1e308) is a hang, not a setting.
S3_TIMEOUTS = {
    "EXPLORER_S3_CONNECT_TIMEOUT_S": (2.0, "seconds to open a connection"),
    "EXPLORER_S3_REQUEST_TIMEOUT_S": (3.0, "seconds without a byte before a request fails"),
    "EXPLORER_S3_MAX_ATTEMPTS": (3, "attempts per request (1 = no retry), with backoff"),
}
S3_LIMIT_CEILINGS = {"EXPLORER_S3_CONNECT_TIMEOUT_S": 300.0, "EXPLORER_S3_REQUEST_TIMEOUT_S": 600.0,
                     "EXPLORER_S3_MAX_ATTEMPTS": 20}
# The longest one call to a filesystem other than the local disk (a listing, a stat, one file
# read or written) may take, retries included: past it the store is unreachable. Long enough for
# a large file on a slow link, short enough that a trickling endpoint is an error, not a hang.
STORE_DEADLINE = ("EXPLORER_STORE_DEADLINE_S", 120.0, "seconds one call to a remote store may take in all", 3600.0)
# The URI schemes a store may have (a path without a scheme is a local directory): the ones the
# tests run. Any other pyarrow scheme would get no deadline that is tested, and some block
# without a network for many minutes (gs://) or load a JVM (hdfs://).
SCHEMES = ("file", "s3")


@dataclass(frozen=True)
class Entry:
    """One directory entry; mtime is UTC (None where the filesystem does not say)."""

    name: str
    path: str
    is_dir: bool
    size: int | None = None
    mtime: _dt.datetime | None = None
    error: str | None = None  # it cannot be opened (e.g. a symbolic link loop): never read


class Files:
    """A root directory on one pyarrow filesystem, with atomic writes."""

    def __init__(self, filesystem: pafs.FileSystem, root: str, uri: str, durable: bool = True):
        self.fs = filesystem
        self.root = root.rstrip("/") or "/"
        self.uri = redact_uri(uri)  # the name messages show: never the credentials a URI can carry
        self.durable = durable
        self.is_local = isinstance(filesystem, pafs.LocalFileSystem)
        self._object_store = filesystem.type_name in _OBJECT_STORES
        self.s3_attempts: int | None = None  # set by open_root for the S3 filesystems it builds
        self.deadline_s = None if self.is_local else store_deadline_s()

    def __setstate__(self, state: dict) -> None:
        # A pickled S3FileSystem keeps its timeouts but not its retry strategy (pyarrow 2x):
        # the copy a Ray worker gets is rebuilt with the attempts the driver chose.
        self.__dict__.update(state)
        if self.__dict__.get("s3_attempts"):
            self.fs = _s3_with_limits(self.fs, attempts=self.s3_attempts)

    # -- reading -------------------------------------------------------------------------------
    def list_dir(self, path: str, stat: bool = False) -> list[Entry]:
        """Direct children of ``path`` (empty when it does not exist), sorted by name.

        Args:
            stat: also fetch size and mtime (free on object stores, one stat per file locally).
        """
        if self.is_local:
            try:
                with os.scandir(path) as it:
                    entries = []
                    for e in it:
                        size = mtime = error = None
                        try:
                            is_dir = e.is_dir()
                        except OSError as exc:  # e.g. ELOOP: a symbolic link loop
                            is_dir, error = False, exc.strerror or str(exc)
                        if not is_dir and not error and (stat or e.is_symlink()):
                            try:  # a link loop or a dangling link: listed, never read
                                st = e.stat()
                                size = st.st_size
                                mtime = _dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc)
                            except OSError as exc:
                                error = exc.strerror or str(exc)
                        entries.append(Entry(e.name, join(path, e.name), is_dir, size, mtime, error))
            except (FileNotFoundError, NotADirectoryError):
                return []
            except OSError as exc:
                raise StoreError(f"cannot list {path}: {exc}") from None
        else:
            selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
            try:
                infos = self.bounded(f"listing {self.display(path)}", lambda: self.fs.get_file_info(selector))
            except (OSError, pa.ArrowException) as exc:
                raise StoreError(f"cannot list {self.display(path)}: {exc}") from None
            entries = [
                Entry(i.base_name, i.path, i.type == pafs.FileType.Directory, i.size if i.is_file else None, i.mtime)
                for i in infos
                if i.type in (pafs.FileType.File, pafs.FileType.Directory)
            ]
        return sorted(entries, key=lambda e: e.name)

    def walk(self, path: str) -> list[Entry]:
        """Every file under ``path``, recursively, with size and mtime (links are not followed)."""
        out: list[Entry] = []
        if self.is_local:
            for directory, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    full = os.path.join(directory, name)
                    try:
                        st = os.lstat(full)
                    except OSError:
                        continue
                    mtime = _dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc)
                    out.append(Entry(name, full, False, st.st_size, mtime))
            return out
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=True)
        try:
            infos = self.bounded(f"listing {self.display(path)}", lambda: self.fs.get_file_info(selector))
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot list {self.display(path)}: {exc}") from None
        return sorted((Entry(i.base_name, i.path, False, i.size, i.mtime) for i in infos if i.is_file), key=lambda e: e.path)

    def move(self, source: str, target: str) -> None:
        """Move one file (a rename on local disk, copy then delete on object storage); never
        replaces an existing ``target`` on local disk."""
        try:
            if self.is_local:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.link(source, target) if not os.path.islink(source) else os.symlink(os.readlink(source), target)
                os.remove(source)
            else:
                self.bounded(f"moving {self.display(source)}", lambda: self.fs.move(source, target))
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot move {self.display(source)} to {self.display(target)}: {exc}") from None

    def list_file_names(self, path: str) -> list[str]:
        """Names of the files directly in ``path`` (empty when it does not exist); no stat."""
        if not self.is_local:
            return [e.name for e in self.list_dir(path) if not e.is_dir]
        try:
            with os.scandir(path) as it:
                return [e.name for e in it if _is_file(e)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise StoreError(f"cannot list {path}: {exc}") from None

    def info(self, path: str) -> Entry | None:
        """Size and mtime of one file, or None when it does not exist."""
        if self.is_local:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return None
            mtime = _dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc)
            return Entry(os.path.basename(path), path, os.path.isdir(path), st.st_size, mtime)
        try:
            i = self.bounded(f"reading the size of {self.display(path)}", lambda: self.fs.get_file_info(path))
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot stat {self.display(path)}: {exc}") from None
        if i.type == pafs.FileType.NotFound:
            return None
        return Entry(i.base_name, i.path, i.type == pafs.FileType.Directory, i.size, i.mtime)

    def exists(self, path: str) -> bool:
        return self.info(path) is not None

    def read_table(self, path: str, columns: list[str] | None = None, read_dictionary=None) -> pa.Table:
        """Read a Parquet file; StoreError (naming the file) when it is unreadable."""
        try:
            return self.bounded(f"reading {self.display(path)}", lambda: pq.read_table(
                path, filesystem=self.fs, columns=columns, read_dictionary=read_dictionary, pre_buffer=True
            ))
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot read {self.display(path)}: {exc}; run `explorer check`") from None

    def read_metadata(self, path: str) -> pq.FileMetaData:
        """The Parquet footer of a file (raises OSError/ArrowException when unreadable)."""
        def read() -> pq.FileMetaData:
            with self.fs.open_input_file(path) as f:
                return pq.read_metadata(f)

        return self.bounded(f"reading the footer of {self.display(path)}", read)

    # -- writing -------------------------------------------------------------------------------
    def put(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` atomically, replacing any file already there."""
        try:
            if self.is_local:
                self._put_local(path, data)
            else:
                self.bounded(f"writing {self.display(path)}", lambda: self._put_remote(path, data))
        except (OSError, pa.ArrowException) as exc:
            raise self.write_error(path, exc) from None

    @contextlib.contextmanager
    def put_stream(self, path: str):
        """A sink to write ``path`` into piece by piece (a Parquet writer's), published atomically
        when the block ends without error, as ``put`` does; an error leaves nothing at ``path``.

        Local disk streams into a hidden temporary (fsynced, then renamed): memory stays that of
        one piece. Elsewhere the bytes are gathered and ``put`` whole (an object store has no
        rename; a multipart upload cannot be cancelled here): memory holds the file.
        """
        if not self.is_local:
            sink = pa.BufferOutputStream()
            yield sink
            self.put(path, sink.getvalue())
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = temporary_path(path, writer_token())
            handle = open(tmp, "xb")
        except OSError as exc:
            raise self.write_error(path, exc) from None
        try:
            try:
                yield handle
                handle.flush()
                if self.durable:
                    os.fsync(handle.fileno())
            finally:
                handle.close()
            os.replace(tmp, path)
        except OSError as exc:
            _remove_quietly(tmp)
            raise self.write_error(path, exc) from None
        except BaseException:
            _remove_quietly(tmp)
            raise

    def write_error(self, path: str, exc: BaseException) -> StoreError:
        """The error to raise for a failed write of ``path``.

        On local disk an OS error (no space left, quota, read-only, permissions, I/O) is the
        whole store's, not this file's: ``StoreUnreachable`` naming the store and the error, so
        that a sweep stops at once instead of rerunning points that can only fail the same way
        (a full disk still had room for the probe's tiny marker file). Elsewhere a ``StoreError``,
        after which a sweep probes the store.
        """
        if self.is_local and isinstance(exc, OSError):
            reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno and exc.strerror else str(exc)
            return StoreUnreachable(f"store {self.uri} cannot be written: {reason} (writing {self.display(path)})")
        return StoreError(f"cannot write {self.display(path)}: {exc}")

    def _put_remote(self, path: str, data: bytes) -> None:
        if self._object_store:
            with self.fs.open_output_stream(path) as f:
                f.write(data)
            return
        self.fs.create_dir(path.rpartition("/")[0], recursive=True)
        tmp = temporary_path(path, writer_token())
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, path)

    def _put_local(self, path: str, data: bytes) -> None:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = temporary_path(path, writer_token())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.remove(tmp)
            except FileNotFoundError:
                pass
            raise

    def delete(self, path: str, missing_ok: bool = True) -> None:
        try:
            if self.is_local:
                os.remove(path)
            else:
                self.bounded(f"deleting {self.display(path)}", lambda: self.fs.delete_file(path))
        except FileNotFoundError:
            if not missing_ok:
                raise StoreError(f"cannot delete {self.display(path)}: it does not exist") from None
        except (OSError, pa.ArrowException) as exc:
            if self.info(path) is None and missing_ok:
                return
            raise StoreError(f"cannot delete {self.display(path)}: {exc}") from None

    def create_exclusive(self, path: str, content: bytes = b"") -> bool:
        """Create a file only if it does not exist (local disk only); True when created."""
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            try:
                os.write(fd, content)
            finally:
                os.close(fd)
        except OSError as exc:
            raise self.write_error(path, exc) from None
        return True

    def bounded(self, what: str, call):
        """``call()``, and on a remote store within ``deadline_s`` in a helper thread that a
        signal does not wait for (module docstring); on local disk simply ``call()``.

        Raises:
            StoreUnreachable: the call took longer than ``deadline_s`` (it is abandoned).
        """
        if self.deadline_s is None:
            return call()
        try:
            return stoppable(call, self.deadline_s, name="explorer-store-io")
        except WorkExpired:
            raise StoreUnreachable(f"store {self.uri} did not answer within {self.deadline_s:g} s ({what}); "
                                   f"{STORE_DEADLINE[0]} sets this limit") from None

    def display(self, path: str) -> str:
        """A path as the user knows it (with the URI scheme for object stores)."""
        if self.is_local:
            return path
        return f"{self.fs.type_name}://{path}"


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:  # a symbolic link loop: not a file anyone can read
        return False


def open_root(uri: str | os.PathLike, filesystem: pafs.FileSystem | None = None, durable: bool = True) -> Files:
    """Resolve a store URI (local path, file://, s3://bucket/prefix, ...) to ``Files``.

    Args:
        uri: the store root. Without ``filesystem``, a URI with a scheme goes through
            ``pyarrow.fs.FileSystem.from_uri`` (for S3 the endpoint, region and credentials come
            from the usual AWS variables, ``AWS_ENDPOINT_URL`` included); anything else is a local
            path. An S3 filesystem built here gets the timeouts and attempts of ``s3_limits()``.
        filesystem: an explicit pyarrow filesystem, used as it is (its own timeouts and retries);
            ``uri`` is then a path on it (a leading ``scheme://`` is dropped).
        durable: fsync local files before renaming them (off only for benchmarks and scratch).

    Raises:
        StoreError: the URI cannot be resolved (unknown scheme, bad S3 options, a bad
            ``EXPLORER_S3_*`` variable).
    """
    text = os.fspath(uri)
    if not text:
        raise StoreError("empty store URI; pass a directory or s3://bucket/prefix")
    if filesystem is not None:
        root = text.split("://", 1)[1] if "://" in text else text
        if isinstance(filesystem, pafs.LocalFileSystem):
            root = os.path.abspath(os.path.expanduser(root))
        return Files(filesystem, root, text, durable)
    # The store's variables are checked whatever the scheme, so that a bad value in a shell profile
    # is an error on the first local run, not a surprise on the first S3 one.
    limits = s3_limits()
    deadline_s = store_deadline_s()
    if "://" not in text:
        return _local_root(os.path.abspath(os.path.expanduser(text)), text, durable)
    scheme = text.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise StoreError(f"cannot open store {text!r}: the scheme {scheme[:20]!r} is not supported; a store is a "
                         f"local directory, file:// or s3://bucket/prefix")
    resolved = text
    if scheme == "s3" and "allow_delayed_open" not in text:
        # Single PUT per object instead of a multipart upload (fewer requests, same atomicity).
        resolved += ("&" if "?" in text else "?") + "allow_delayed_open=true"
    try:  # S3 without a region asks the endpoint for the bucket's
        fs, root = stoppable(lambda: pafs.FileSystem.from_uri(resolved), deadline_s, name="explorer-store-io")
    except WorkExpired:
        raise StoreUnreachable(f"cannot open store {redact_uri(text.split('?', 1)[0])!r}: no answer within {deadline_s:g} s; "
                               f"{STORE_DEADLINE[0]} sets this limit") from None
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise StoreError(redact_uri(f"cannot open store {text!r}: {exc}")) from None  # pyarrow's message quotes it too
    if isinstance(fs, pafs.LocalFileSystem):
        return _local_root(os.path.abspath(root), text, durable)
    attempts = None
    if isinstance(fs, pafs.S3FileSystem):
        connect_s, request_s, attempts = limits
        fs = _s3_with_limits(fs, connect_s, request_s, attempts)
    files = Files(fs, root, text.split("?", 1)[0], durable)
    files.s3_attempts = attempts
    return files


def s3_limits() -> tuple[float, float, int]:
    """``(connect timeout s, request timeout s, attempts)`` for S3 stores opened from a URI:
    ``S3_TIMEOUTS``'s defaults, or the environment variables named there.

    Raises:
        StoreError: a variable that is not a positive number of at most its ceiling
            (``S3_LIMIT_CEILINGS``); NaN and infinities included.
    """
    values = []
    for name, (default, meaning) in S3_TIMEOUTS.items():
        text = os.environ.get(name, "").strip()
        if not text:
            values.append(default)
            continue
        ceiling = S3_LIMIT_CEILINGS[name]
        try:
            value = type(default)(text)
        except ValueError:
            value = 0
        if not 0 < value <= ceiling:  # False for NaN too
            kind = "a positive integer" if isinstance(default, int) else "a positive number"
            raise StoreError(f"{name}={text[:40]!r}: expected {kind} of at most {ceiling:g} ({meaning}; default {default})")
        values.append(value)
    return values[0], values[1], values[2]


def _local_root(root: str, uri: str, durable: bool) -> Files:
    """A store folder on local disk; a path that exists and is not a folder is refused (it would
    read as an empty store, and every write would fail)."""
    if os.path.exists(root) and not os.path.isdir(root):
        raise StoreError(f"store {uri}: {root} is a file, not a folder; pass a folder (new or a store)")
    return Files(pafs.LocalFileSystem(), root, uri, durable)


def store_deadline_s() -> float:
    """Seconds one call to a remote store may take in all (``STORE_DEADLINE``): its default, or
    the environment variable named there.

    Raises:
        StoreError: a value that is not a positive number of at most the ceiling (NaN, inf included).
    """
    name, default, meaning, ceiling = STORE_DEADLINE
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= ceiling:  # False for NaN too
        raise StoreError(f"{name}={text[:40]!r}: expected a positive number of at most {ceiling:g} ({meaning}; "
                         f"default {default:g})")
    return value


def _s3_with_limits(fs: pafs.S3FileSystem, connect_s: float | None = None, request_s: float | None = None,
                    attempts: int = 3) -> pafs.S3FileSystem:
    """The same S3 filesystem (endpoint, region, credentials, options) with these timeouts (None:
    keep its own) and a standard retry strategy of ``attempts``."""
    options = dict(fs.__reduce__()[1][0])  # S3FileSystem's own pickling: every constructor option
    if connect_s is not None:
        options["connect_timeout"] = connect_s
    if request_s is not None:
        options["request_timeout"] = request_s
    return pafs.S3FileSystem(**options, retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=attempts))
