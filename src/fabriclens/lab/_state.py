"""The lab's state directory: checked before every use, its files opened without following
symbolic links, and the locks that keep two commands from working on one lab at once.

The directory (``FABRICLENS_LAB_STATE``, default /run/fabriclens/labs) must be a real directory
(not a symbolic link) owned by the user running the lab (root) that no group or other user can
write: anyone who can write there could plant a link that root would then follow.

Locks are ``flock`` locks: one per lab (``NAME.lock``, there while a command holds it) and one
on the directory itself (while a lab picks its subnet, while ``down --all`` takes stock). A lab
lock is always taken before the directory lock, never the other way round.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from fabriclens.errors import InputError
from fabriclens.lab._ip import LabError

STATE_ENV = "FABRICLENS_LAB_STATE"
DEFAULT_STATE_DIR = Path("/run/fabriclens/labs")
LOCK_TIMEOUT_S = 60.0
MAX_STATE_BYTES = 1 << 20


class StateError(InputError):
    """The state directory, or a file in it, is not safe to use (exit status 2)."""


class LabBusy(LabError):
    """Another command held a lab's lock for longer than the timeout (exit status 3)."""


def open_dir(path: Path, create: bool = True) -> int:
    """An fd of the checked state directory (created 0755 when missing and ``create``)."""
    if create and not os.path.lexists(path):
        with contextlib.suppress(FileExistsError):
            os.makedirs(path.parent, mode=0o755, exist_ok=True)
            os.mkdir(path, 0o755)
            os.chmod(path, 0o755)  # whatever the umask said
    fix = f"point {STATE_ENV} at a directory only root can write, e.g. {DEFAULT_STATE_DIR}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            what = "a symbolic link" if os.path.islink(path) else "not a directory"
            raise StateError(
                f"lab state directory {path} is {what}: refusing to use it", fix
            ) from None
        raise StateError(f"lab state directory {path}: {exc.strerror}", fix) from None
    st = os.fstat(fd)
    problem = ""
    if st.st_uid != os.geteuid():
        problem = f"is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"can be written by other users (mode {stat.S_IMODE(st.st_mode):o})"
    if problem:
        os.close(fd)
        raise StateError(f"lab state directory {path} {problem}: refusing to use it", fix)
    return fd


@contextlib.contextmanager
def state_dir(path: Path, create: bool = True) -> Iterator[int]:
    """The checked state directory as an fd, for the ``dir_fd`` of the functions below."""
    fd = open_dir(path, create)
    try:
        yield fd
    finally:
        os.close(fd)


def _refuse(path: Path, name: str, what: str) -> StateError:
    return StateError(
        f"{path / name} is {what}: refusing to follow or replace it",
        "remove it if you did not put it there",
    )


def lstat(dfd: int, name: str) -> os.stat_result | None:
    """lstat of an entry of the directory; None when missing."""
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def is_ours(st: os.stat_result | None) -> bool:
    """A regular file owned by this user: something the lab may have written."""
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def read_file(dfd: int, path: Path, name: str) -> bytes | None:
    """The bytes of a regular file of ours; None when missing; StateError for anything else."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, name, "a symbolic link") from None
        raise StateError(
            f"{path / name}: {exc.strerror}", "check the lab state directory"
        ) from None
    try:
        if not is_ours(os.fstat(fd)):
            raise _refuse(path, name, "not a regular file written by this user")
        return os.read(fd, MAX_STATE_BYTES)
    finally:
        os.close(fd)


def write_file(dfd: int, path: Path, name: str, data: bytes) -> None:
    """Replace ``name`` atomically (a new file, then rename); never through a planted link."""
    st = lstat(dfd, name)
    if st is not None and not is_ours(st):
        raise _refuse(path, name, "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not ours")
    tmp = f"{name}.{os.getpid()}.{threading.get_ident() % 100000}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                 dir_fd=dfd)  # fmt: skip
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _open_own(dfd: int, path: Path, name: str, flags: int) -> int:
    """An fd on ``name`` in the state directory, created if missing (mode 0600): never through
    a planted link, and only a regular file this user wrote."""
    try:
        fd = os.open(name, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, name, "a symbolic link") from None
        raise
    if not is_ours(os.fstat(fd)):
        os.close(fd)
        raise _refuse(path, name, "not a regular file written by this user")
    return fd


def open_append(dfd: int, path: Path, name: str) -> int:
    """An fd to append to (a forwarder's log); never through a planted link."""
    return _open_own(dfd, path, name, os.O_WRONLY | os.O_APPEND)


def unlink_ours(dfd: int, name: str) -> bool:
    """Remove ``name`` if it is a regular file of ours (never a link, a directory, a stranger's)."""
    if not is_ours(lstat(dfd, name)):
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dfd)
        return True
    return False


# ---- locks ------------------------------------------------------------------------------------
# flock belongs to an open file: a second open of the same lock in this process would wait for
# itself. Holders in this process are counted instead (and threads take turns on a local lock).
_guard = threading.Lock()
_local: dict[str, threading.RLock] = {}
_depth: dict[str, int] = {}


def _local_lock(key: str) -> threading.RLock:
    with _guard:
        return _local.setdefault(key, threading.RLock())


def _flock(fd: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


@contextlib.contextmanager
def lab_lock(path: Path, name: str, timeout_s: float | None = None) -> Iterator[None]:
    """Hold lab ``name``'s lock; LabBusy after ``timeout_s`` (default LOCK_TIMEOUT_S)."""
    timeout = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    key, lock_name = f"lab:{name}", f"{name}.lock"
    deadline = time.monotonic() + timeout
    local = _local_lock(key)
    if not local.acquire(timeout=max(0.0, timeout)):
        raise _busy(path, name, lock_name, timeout)
    try:
        if _depth.get(key):
            _depth[key] += 1
            try:
                yield
            finally:
                _depth[key] -= 1
            return
        with state_dir(path) as dfd:
            fd = _lock_file(dfd, path, name, lock_name, deadline, timeout)
            _depth[key] = 1
            try:
                yield
            finally:
                _depth[key] = 0
                # the holder removes the lock file as it lets go (so none is left behind); one
                # that waits on the removed file sees it is no longer the file at that name, and
                # takes the one there now
                unlink_ours(dfd, lock_name)
                os.close(fd)
    finally:
        local.release()


def _lock_file(dfd: int, path: Path, name: str, lock_name: str, deadline: float,
               timeout: float) -> int:  # fmt: skip
    while True:
        fd = _open_own(dfd, path, lock_name, os.O_RDWR)
        if not _flock(fd, deadline):
            os.close(fd)
            raise _busy(path, name, lock_name, timeout)
        st = lstat(dfd, lock_name)
        if st is not None and st.st_ino == os.fstat(fd).st_ino:
            return fd
        os.close(fd)  # removed (or replaced) while we waited: take the one there now


@contextlib.contextmanager
def dir_lock(path: Path, timeout_s: float | None = None) -> Iterator[int]:
    """Hold the state directory's lock; yields the directory's fd."""
    timeout = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    local = _local_lock("dir")
    if not local.acquire(timeout=max(0.0, timeout)):
        raise _busy(path, "", ".", timeout)
    try:
        with state_dir(path) as dfd:
            if _depth.get("dir"):
                yield dfd
                return
            if not _flock(dfd, time.monotonic() + timeout):
                raise _busy(path, "", ".", timeout)
            _depth["dir"] = 1
            try:
                yield dfd
            finally:
                _depth["dir"] = 0
                fcntl.flock(dfd, fcntl.LOCK_UN)
    finally:
        local.release()


def _busy(path: Path, name: str, lock_name: str, timeout: float) -> LabBusy:
    what = f"lab {name!r}" if name else f"the lab state directory {path}"
    return LabBusy(
        f"{what} is busy: another fabriclens lab command has held its lock "
        f"({path / lock_name if name else path}) for {timeout:g} s",
        "wait for that command to finish, then try again",
    )
