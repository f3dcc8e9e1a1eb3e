"""A Unix socket only its owner can reach, for a service a host on the same
machine binds as ``unix:/path``: the same rules as hookwire's own services.

The directory must belong to this user and be writable by nobody else
(another user could replace the socket); the socket is bound in a private
directory beside its final path, made 0600, and renamed into place, so it
is never reachable with looser permissions. A stale socket (nobody answers
on it) is replaced; a live one, or a file that is not a socket, is refused.
The socket is removed on stop if it is still the one this process placed.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import tempfile
from typing import Optional

#: The longest socket path accepted, in bytes: the kernel's ``sun_path``
#: holds 108 and binding happens at a longer staging path first.
MAX_SOCKET_PATH_BYTES = 80


class OwnerSocket:
    """One socket path through its life: :meth:`stage` (the checks, and
    the private path to bind), :meth:`place` once bound, :meth:`remove` on
    stop."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._staging: Optional[str] = None
        self._identity: Optional[tuple[int, int]] = None

    def stage(self) -> str:
        """Checks the path and its directory; returns where to bind."""
        path = self.path
        if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
            raise OSError("socket path %s: longer than %d bytes (use a shorter path, e.g. under "
                          "$XDG_RUNTIME_DIR)" % (path, MAX_SOCKET_PATH_BYTES))
        if not os.path.basename(path):
            raise OSError("socket path %s names no file" % path)
        parent = os.path.realpath(os.path.dirname(path) or ".")
        self.path = os.path.join(parent, os.path.basename(path))
        info = os.stat(parent)
        if info.st_mode & 0o022:
            raise OSError("socket path %s: its directory %s is group- or world-writable (mode %o): "
                          "another user could replace the socket; use a directory only you can write to"
                          % (path, parent, info.st_mode & 0o7777))
        if info.st_uid != os.geteuid():
            raise OSError("socket path %s: its directory %s belongs to user %d, not to this process's %d"
                          % (path, parent, info.st_uid, os.geteuid()))
        _check_existing(self.path)
        self._staging = tempfile.mkdtemp(prefix=".hookwire-sock-", dir=parent)
        return os.path.join(self._staging, "s")

    def place(self) -> None:
        """Makes the bound socket 0600 and moves it into place."""
        assert self._staging is not None, "stage() first"
        staged = os.path.join(self._staging, "s")
        os.chmod(staged, 0o600)
        os.rename(staged, self.path)
        os.rmdir(self._staging)
        self._staging = None
        placed = os.lstat(self.path)
        self._identity = (placed.st_dev, placed.st_ino)

    def remove(self) -> None:
        """Removes the socket if it is still the one placed (and any
        staging left by a failed start)."""
        if self._staging is not None:
            try:
                os.unlink(os.path.join(self._staging, "s"))
            except FileNotFoundError:
                pass
            os.rmdir(self._staging)
            self._staging = None
        if self._identity is None:
            return
        try:
            now = os.lstat(self.path)
        except FileNotFoundError:
            return
        if (now.st_dev, now.st_ino) == self._identity:
            os.unlink(self.path)
        self._identity = None


def _check_existing(path: str) -> None:
    """Refuses an existing ``path`` unless it is a stale socket."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise OSError("socket path %s exists and is not a socket: refusing to replace it" % path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError as e:
        if e.errno == errno.ECONNREFUSED:
            return
        raise OSError("socket path %s exists and cannot be probed: %s" % (path, e)) from None
    finally:
        probe.close()
    raise OSError("socket path %s: another process is listening on it" % path)
