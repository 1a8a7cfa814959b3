# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""secretmem.getpass: a password from the terminal straight into a Secret.

getpass.getpass() and input() return a str: the password is then in the
ordinary heap (and in the buffers of the TextIOWrapper that read it) until
the garbage collector frees it, and the freed memory is not cleared.  Here
the bytes go from the kernel (the terminal's line, or the pipe or file of
a non-terminal stdin) into secret memory with os.readv on the raw file
descriptor: no str, no bytes, no buffered file object on the way.
"""
from __future__ import annotations

import os
import termios

from . import Secret, _size

MAX_LEN = 1024


def _write(fd: int, text: str) -> None:
    data = text.encode(errors="replace")
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _read_byte(fd: int, view: memoryview, at: int) -> int:
    """Read one byte of fd into view[at]; the number of bytes read (0: end
    of file).  The slice is released here, also when the read is
    interrupted (KeyboardInterrupt), so that no view outlives the call."""
    part = view[at:at + 1]
    try:
        return os.readv(fd, [part])
    finally:
        part.release()


def _read_line(fd: int, buf: Secret, max_len: int) -> int:
    """Read one line of fd into buf, a byte at a time (so that nothing after
    the newline is taken from a pipe); the number of bytes before the
    newline.  EOFError at end of file before any byte; ValueError after
    reading (and discarding) a line longer than max_len."""
    view = buf.view()
    try:
        n = 0
        while True:
            at = min(n, max_len)  # past max_len: keep reading into one scratch byte
            if _read_byte(fd, view, at) == 0:
                if n == 0:
                    raise EOFError("end of file before a password")
                break
            if view[at] == 0x0A:  # "\n": not part of the password
                break
            n += 1
        if n > max_len:
            raise ValueError(f"the password is longer than max_len ({max_len} bytes); it was discarded")
        return n
    finally:
        view.release()


def getpass(prompt: str = "Password: ", *, max_len: int = MAX_LEN) -> Secret:
    """Read a password into a Secret, with the terminal's echo off.

    Like getpass.getpass(): the controlling terminal (/dev/tty) when the
    process has one - the prompt goes there, echo is turned off
    (termios) while the line is read and restored on every way out,
    KeyboardInterrupt included; without one, stdin (file descriptor 0, not
    sys.stdin's buffer) is read the same way, and the prompt goes to stderr.
    The line ends at "\\n" (not part of the password) or at end of file;
    end of file before any byte raises EOFError.  Nothing after the newline
    is read.  The bytes go from the kernel into secret memory with os.readv:
    never a str or bytes object.

    max_len: the longest password taken (an int >= 1); a longer line is
    read to its end, zeroized and refused with ValueError.
    Returns a Secret of exactly the password's length (allocator-backed).
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
    max_len = _size(max_len, "max_len")
    if max_len < 1:
        raise ValueError("max_len must be >= 1")
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
        own, out = True, -1
    except OSError:
        fd, own, out = 0, False, 2
    try:
        if own:
            out = fd
        # one byte more than max_len: the scratch byte of a line too long
        buf = Secret(max_len + 1)
        try:
            if os.isatty(fd):
                old = termios.tcgetattr(fd)
                new = termios.tcgetattr(fd)
                new[3] &= ~termios.ECHO
                # TCSAFLUSH: what was typed before the prompt is discarded
                termios.tcsetattr(fd, termios.TCSAFLUSH, new)
                try:
                    _write(out, prompt)
                    n = _read_line(fd, buf, max_len)
                finally:
                    termios.tcsetattr(fd, termios.TCSAFLUSH, old)
                    _write(out, "\n")  # the newline typed was not echoed
            else:
                _write(out, prompt)
                n = _read_line(fd, buf, max_len)
            result = Secret(n)
            dst, src = result.view(), buf.view()
            try:
                dst[:] = src[:n]  # secret memory to secret memory (memmove)
            finally:
                dst.release()
                src.release()
            return result
        finally:
            buf.close()
    finally:
        if own:
            os.close(fd)
