"""Where the command line reads and writes: what a storage engineer can trust.

:class:`Output` is one of two kinds, chosen from what ``--out`` names:

* **replace** — a regular file, new or existing (a symbolic link is followed: its target is
  replaced, the link stays).  The bytes go into an anonymous temporary file in the target's folder
  (``O_TMPFILE``: it has no name, so a crash or SIGKILL leaves nothing behind); on success it is
  synced, given the old file's mode and owner (where permitted) or, for a new file,
  ``0666 & ~umask``, and linked over the target in one rename.  A file system without
  ``O_TMPFILE`` gets a hidden ``.ciphergrid-*.part`` file instead, removed on any failure we
  survive; so does an output that other processes write too (``named=``: MPI ranks on other
  nodes open it by that name).  An atomic replace makes a new inode: hard links to the old file keep the old bytes.
* **through** — stdout, a FIFO, a character or block device: these cannot be replaced, so they
  are written in place, every write checked (short writes continued, errors raised);
  :attr:`Output.written` counts the bytes that reached it, so a failure can say how many did.
  Standard output that is a regular file (``> file``) is cut back to where it started on failure.

:class:`Input` opens ``--in`` (or stdin) unbuffered, so that the streaming pipeline may read at
offsets, and knows its size when it has one (regular files, block devices).

Errors name the user's paths, never the temporary file's.
"""

from __future__ import annotations

import errno
import os
import stat

from . import interrupts
from .errors import InvalidArgument

_PROC_FD = "/proc/self/fd"

#: a file system whose pages are allocated (and zero-filled) when first written: tmpfs, shmem
TMPFS_MAGIC = 0x01021994
#: the smallest input whose output is reserved ahead (:meth:`Output.reserve`)
RESERVE_MIN = 32 << 20
#: bytes reserved per ``fallocate`` call: the call holds the file's inode lock, which the stream's
#: writes wait for (one slice keeps each wait short)
RESERVE_SLICE = 16 << 20


def fs_magic(fd: int) -> int | None:
    """``f_type`` of the file system holding ``fd`` (fstatfs; None where it cannot be read)."""
    try:
        import ctypes
        import struct

        buf = ctypes.create_string_buffer(256)
        if ctypes.CDLL(None, use_errno=True).fstatfs(fd, buf) != 0:
            return None
        return struct.unpack_from("l", buf)[0]  # struct statfs begins with its f_type (a long)
    except (OSError, AttributeError, ValueError):
        return None


def appends(fd: int) -> bool:
    """Whether ``fd`` writes at the end whatever its offset (O_APPEND): its flags as
    /proc/self/fdinfo shows them (no fcntl module: a sealed file's start-up imports none), else
    fcntl's F_GETFL (an fd that is not open: OSError, EBADF)."""
    try:
        info = os.open(f"/proc/self/fdinfo/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        info = None
    if info is not None:
        try:
            text = os.read(info, 4096)
        finally:
            os.close(info)
        for line in text.split(b"\n"):
            if line.startswith(b"flags:"):
                return bool(int(line[6:].strip(), 8) & os.O_APPEND)
    import fcntl

    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


#: the kernel's interfaces that look like regular files (statfs f_type): procfs, sysfs
_KERNEL_FS = {0x9FA0: "proc", 0x62656572: "sysfs"}

#: fallocate(2)'s mode: allocate without changing the file's size (what a reader or a killed
#: process leaves stays what was written)
FALLOC_FL_KEEP_SIZE = 1


def _fallocate():
    """libc's ``fallocate(fd, mode, offset, len)`` (Linux), or None."""
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    fn.restype = ctypes.c_int
    return fn


class Reservation:
    """Bytes [start, start + size) of a regular file allocated by a background thread
    (``fallocate`` with FALLOC_FL_KEEP_SIZE in slices, front first: the file's size does not
    change), while the process does other things.

    On a RAM disk (tmpfs) most of the cost of writing a new file is allocating its pages, and the
    file's writes, this allocation included, go one at a time under its inode lock: a plain copy
    (``cat``) pays it inside its one thread.  Allocated while the command starts up (imports,
    keys, the engine), it is paid on the otherwise idle core before the first byte is
    enciphered (docs/benchmarks.md, 'Figures moved from code comments').  A failure (a full
    disk, a file size limit, no support) ends the reservation quietly: the writes meet the same
    condition and report it.  :meth:`stop` returns once the thread is out of its last call (the
    descriptor may then be closed)."""

    def __init__(self, fd: int, start: int, size: int, fallocate):
        import threading

        self.fd, self.start, self.size = fd, start, size
        self._fallocate = fallocate
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="ciphergrid-reserve", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        off, end = self.start, self.start + self.size
        while off < end and not self._stop.is_set():
            n = min(RESERVE_SLICE, end - off)
            if self._fallocate(self.fd, FALLOC_FL_KEEP_SIZE, off, n) != 0:
                return  # (EINTR included: the rest is allocated by the writes)
            off += n

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _umask() -> int:
    """The process's umask (read from /proc where possible: setting it to read it races)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _reraise(e: OSError, path: str, what: str):
    """An OSError again, naming the user's path (not a temporary file)."""
    raise OSError(e.errno, f"{what} {path}: {e.strerror or e}") from None


def device_size(fd: int) -> int | None:
    """Bytes of a block device (its end as lseek sees it), or None."""
    try:
        here = os.lseek(fd, 0, os.SEEK_CUR)
        end = os.lseek(fd, 0, os.SEEK_END)
        os.lseek(fd, here, os.SEEK_SET)
        return end - here
    except OSError:
        return None


def read_exact(read, n: int) -> bytes:
    """Up to ``n`` bytes from ``read(k)`` calls (fewer only at the end of the input)."""
    parts, got = [], 0
    while got < n:
        b = read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


class Input:
    """``--in PATH`` or standard input, as an unbuffered binary file; ``size``: bytes left to read
    when known (a regular file or a block device), else None (pipes, terminals, sockets)."""

    def __init__(self, path: str | None):
        self.path = path if path not in (None, "-") else None
        self.name = self.path or "<stdin>"
        if self.path is None:
            self.f = os.fdopen(0, "rb", buffering=0, closefd=False)
        else:
            try:
                if os.path.isdir(self.path):
                    raise InvalidArgument(f"--in {self.path}: is a directory")
                self.f = open(self.path, "rb", buffering=0)
            except OSError as e:
                raise InvalidArgument(f"--in {self.path}: cannot read: {e.strerror}") from None
        self.fd = self.f.fileno()
        st = os.fstat(self.fd)
        self.is_stdin = self.path is None
        self.regular = stat.S_ISREG(st.st_mode)
        if self.regular:
            self.size = max(0, st.st_size - os.lseek(self.fd, 0, os.SEEK_CUR))
        elif stat.S_ISBLK(st.st_mode):
            self.size = device_size(self.fd)
        else:
            self.size = None
        self.stat = st

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the input)."""
        data = read_exact(self.f.read, n)
        if self.size is not None:
            self.size = max(0, self.size - len(data))
        return data

    def readinto(self, buf) -> int:
        """Fill ``buf`` (fewer bytes only at the end of the input); the bytes read."""
        view = memoryview(buf).cast("B")
        done = 0
        while done < len(view):
            k = self.f.readinto(view[done:])
            if not k:
                break
            done += k
        if self.size is not None:
            self.size = max(0, self.size - done)
        return done

    def close(self) -> None:
        if not self.is_stdin:
            self.f.close()


def output_target(path: str | None) -> str:
    """What ``--out path`` names, without opening it: "stdout" (None or "-"), "descriptor" (a
    path under /proc/ or /dev/fd/), "regular" (a regular file), "new" (nothing yet, in an
    existing folder), "nowhere" (nothing yet, nor its folder), "directory", "special" (a FIFO,
    a device, a socket) or "unknown" (it cannot be looked at)."""
    if path in (None, "-"):
        return "stdout"
    target = os.path.realpath(path)
    if target.startswith(("/proc/", "/dev/fd/")):
        return "descriptor"
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return "new" if os.path.isdir(os.path.dirname(target) or ".") else "nowhere"
    except OSError:
        return "unknown"
    if stat.S_ISREG(mode):
        return "regular"
    return "directory" if stat.S_ISDIR(mode) else "special"


class Output:
    """``--out PATH`` or standard output (see the module doc).  Use as a context manager: a clean
    exit commits (names the file), an exception aborts (nothing left behind)."""

    def __init__(self, path: str | None, *, size: int | None = None, sync: bool = True,
                 named=None):
        self.sync = sync          # False (--no-sync): named without waiting for the disk
        self._named = named       # f(target) -> the temporary file's name, for a file that other
                                  # processes open by name (MPI ranks on other nodes)
        self.user_path = path if path not in (None, "-") else None
        self.name = self.user_path or "<stdout>"
        self.written = 0          # bytes that reached a write-through output
        self._tmp_name = None     # the named temporary file (no O_TMPFILE)
        self._old = None          # stat of the file being replaced
        self._cut = None          # stdout as a regular file: where to cut back on failure
        self._closed = False
        self._reserved = None     # a Reservation while one is under way
        if self.user_path is None:
            self.kind = "through"
            self.fd = 1
            self._owns_fd = False
            try:
                st = os.fstat(1)
            except OSError as e:
                raise OSError(e.errno, f"standard output: {e.strerror}") from None
            if stat.S_ISREG(st.st_mode):
                self._cut = os.lseek(1, 0, os.SEEK_CUR) if not self._append(1) else st.st_size
            return
        self._owns_fd = True
        target = os.path.realpath(self.user_path)  # follows symbolic links (a dangling one too)
        self.target = target
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
            try:  # a magic link (/dev/stdout -> /proc/self/fd/1 -> pipe:[...]): what it opens
                st = os.stat(self.user_path)
                target = self.target = self.user_path
            except OSError:
                pass
        except OSError as e:
            _reraise(e, self.user_path, "--out")
        if st is not None and target.startswith(("/proc/", "/dev/fd/")) and stat.S_ISREG(st.st_mode):
            # an open file of ours (/dev/stdout redirected to a file): written through, truncated
            # as `openssl enc -out /dev/stdout` does; it cannot be replaced by a rename
            self.kind = "through"
            try:
                self.fd = os.open(self.user_path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
            except OSError as e:
                _reraise(e, self.user_path, "cannot write --out")
            kernel = _KERNEL_FS.get(fs_magic(self.fd))
            if kernel:  # /proc/version, /proc/sys/...: not a file that holds data
                os.close(self.fd)
                raise OSError(errno.EINVAL, f"cannot write --out {self.user_path}: it is a file of "
                                            f"the kernel's {kernel} interface, which holds no data")
            self._cut = 0
            return
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, f"cannot create --out {self.user_path}: it is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a FIFO, a device, a socket: written through, never replaced
            self.kind = "through"
            try:
                self.fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
            except OSError as e:
                _reraise(e, self.user_path, "cannot write --out")
            if stat.S_ISBLK(st.st_mode) and size is not None:
                room = device_size(self.fd)
                if room is not None and size > room:
                    os.close(self.fd)
                    raise InvalidArgument(f"--out {self.user_path}: the device holds {room} bytes, "
                                          f"the output is {size}")
            return
        self.kind = "replace"
        self._old = st
        folder = os.path.dirname(target) or "."
        if not os.path.isdir(folder):  # (an I/O error, as a folder we may not write into)
            raise OSError(errno.ENOENT, f"cannot create --out {self.user_path}: no such directory "
                                        f"{folder}")
        self.folder = folder
        self.fd = self._open_temp(folder)

    @staticmethod
    def _append(fd: int) -> bool:
        return appends(fd)

    def _open_temp(self, folder: str) -> int:
        if self._named is not None:  # a name others open: removed on failure like the one below
            name = self._named(self.target)
            try:
                fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except OSError as e:
                _reraise(e, self.user_path, "cannot create --out")
            self._tmp_name = name
            return fd
        if hasattr(os, "O_TMPFILE") and os.path.isdir(_PROC_FD):
            try:
                return os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                    _reraise(e, self.user_path, "cannot create --out")
        while True:  # no O_TMPFILE here: a hidden name, removed on failure
            name = os.path.join(folder, f".ciphergrid-{os.urandom(6).hex()}.part")
            try:
                fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            except OSError as e:
                _reraise(e, self.user_path, "cannot create --out")
            self._tmp_name = name
            return fd

    @staticmethod
    def opens_quietly(path: str | None) -> bool:
        """Whether ``Output(path)`` does nothing another process could see until it is written:
        standard output (only looked at), or a path that names a regular file or nothing yet (an
        anonymous temporary file is opened); not a FIFO or a device (opening one may block or
        act), nor what the constructor refuses."""
        return output_target(path) in ("stdout", "regular", "new")

    def discard(self) -> None:
        """Give the output up unwritten: a file to be replaced is dropped; one written through
        (stdout) is left as it was."""
        if self.kind == "through" and self.written == 0:
            self.commit()
        else:
            self.abort()

    # -- reserving ----------------------------------------------------------------------------
    def reserve(self, nbytes: int | None) -> bool:
        """Start allocating the ``nbytes`` the output will (about) take from where it will be
        written, in the background (:class:`Reservation`), where that is faster: a regular
        file written at offsets on a RAM disk, at least RESERVE_MIN bytes.  The output's size is
        still what is written (the reservation keeps the size; what it allocated past the end is
        given back when the output is committed or given up)."""
        if nbytes is None or nbytes < RESERVE_MIN or self._reserved is not None or self._closed:
            return False
        try:
            st = os.fstat(self.fd)
            if (not stat.S_ISREG(st.st_mode) or self._append(self.fd)
                    or fs_magic(self.fd) != TMPFS_MAGIC):
                return False
            here = os.lseek(self.fd, 0, os.SEEK_CUR)
        except OSError:
            return False
        fallocate = _fallocate()
        if fallocate is None:
            return False
        self._reserved = Reservation(self.fd, here, nbytes, fallocate)
        return True

    def wait_reserved(self) -> None:
        """Until the reservation's thread has ended (others use the file's descriptor next)."""
        if self._reserved is not None:
            self._reserved._thread.join()

    def stop_reserving(self) -> None:
        """End the reservation where it got to, before the writing starts: the writes allocate
        the rest themselves.  (Both take the file's inode lock, so a reservation going on beside
        the writes gains nothing, and a write waiting behind an allocation spins on its core.)"""
        if self._reserved is not None:
            self._reserved.stop()

    def _end_reservation(self) -> None:
        """Stop the reservation and give back what it allocated past the file's end (a
        truncation to the size the file has)."""
        if self._reserved is None:
            return
        res = self._reserved
        self._reserved = None
        res.stop()
        size = os.fstat(self.fd).st_size
        if res.start + res.size > size:
            os.ftruncate(self.fd, size)

    # -- writing ------------------------------------------------------------------------------
    def write(self, data) -> None:
        """Write all of ``data`` (short writes are continued; errors raise OSError)."""
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            with interrupts.deferred():  # a signal waits until the count below is made
                try:
                    k = os.write(self.fd, view[done:])
                except OSError as e:
                    if isinstance(e, BrokenPipeError):
                        raise
                    _reraise(e, self.name, "cannot write")
                done += k
                if self.kind == "through":
                    self.written += k

    def count(self, k: int) -> None:
        """Bytes that another writer (the streaming pipeline) put through this output."""
        if self.kind == "through":
            self.written += k

    # -- the end --------------------------------------------------------------------------------
    def commit(self) -> None:
        """Make the output final: sync and name a replaced file; a stream is left as written."""
        if self._closed:
            return
        if self.kind == "through":
            try:
                self._end_reservation()
            except OSError as e:
                self.abort()
                _reraise(e, self.name, "cannot write")
            self._closed = True
            if self._owns_fd:
                os.close(self.fd)
            return
        fd = self.fd
        try:
            self._end_reservation()
            if self.sync:
                os.fsync(fd)
            old = self._old
            os.fchmod(fd, stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask())
            if old is not None:
                try:
                    os.fchown(fd, old.st_uid, old.st_gid)
                except PermissionError:
                    pass  # not ours to give away: the new file keeps our ownership
                if stat.S_IMODE(old.st_mode) & (stat.S_ISUID | stat.S_ISGID):
                    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # chown cleared the set-id bits
            if self._tmp_name is None:
                self._link_anonymous()
            else:
                os.replace(self._tmp_name, self.target)
                self._tmp_name = None
            self._sync_folder()
        except OSError as e:
            self.abort()
            _reraise(e, self.user_path, "cannot write --out")
        self._closed = True
        os.close(fd)

    def _link_anonymous(self) -> None:
        """Name the O_TMPFILE file: linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N (os.link makes
        that call only when given a directory descriptor, hence ``dst_dir_fd``)."""
        src = f"{_PROC_FD}/{self.fd}"
        dfd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            base = os.path.basename(self.target)
            if self._old is None:
                try:  # a new file: give the anonymous file its name directly
                    os.link(src, base, dst_dir_fd=dfd, follow_symlinks=True)
                    return
                except FileExistsError:
                    pass  # someone made it meanwhile: replace it like an existing file
            while True:
                name = f".ciphergrid-{os.urandom(6).hex()}.part"
                try:
                    os.link(src, name, dst_dir_fd=dfd, follow_symlinks=True)
                    break
                except FileExistsError:
                    continue
            try:
                os.replace(name, base, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(name, dir_fd=dfd)
                except OSError:
                    pass
                raise
        finally:
            os.close(dfd)

    def _sync_folder(self) -> None:
        if not self.sync:
            return
        try:
            dfd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)

    def abort(self) -> None:
        """Leave nothing: drop the temporary file; stdout as a regular file is cut back."""
        if self._closed:
            return
        self._closed = True
        try:
            self._end_reservation()  # (its thread out of the descriptor before close)
        except OSError:
            pass
        if self.kind == "through":
            if self._cut is not None:  # (the pipeline may have sized it ahead: compare sizes)
                try:
                    if os.fstat(self.fd).st_size > self._cut:
                        os.ftruncate(self.fd, self._cut)
                    self.written = 0
                except OSError:
                    pass
            if self._owns_fd:
                os.close(self.fd)
            return
        try:
            os.close(self.fd)  # an O_TMPFILE file is gone with its last descriptor
        except OSError:
            pass
        if self._tmp_name is not None:
            try:
                os.unlink(self._tmp_name)
            except OSError:
                pass
            self._tmp_name = None

    def __enter__(self) -> "Output":
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False
