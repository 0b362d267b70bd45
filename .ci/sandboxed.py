#!/usr/bin/env python3
"""Runs a command under the system call filter of deploy/inklink.service, as systemd applies it.

`systemd-analyze verify` accepts a unit whose filter kills the server at start (SIGSYS for a
denied call); this runs the real binary under the very filter, so `.ci/run` sees that too.

    python3 .ci/sandboxed.py deploy/inklink.service -- /path/to/inklink serve

The unit's `SystemCallFilter=` lines are read in order, with systemd's rules: the first line
decides whether the set is one of allowed calls (then every other call is denied) or of denied
ones; a later line with `~` takes its calls out of an allowed set, one without adds them. Groups
(`@system-service`) are expanded by `systemd-analyze syscall-filter`. A denied call fails with
`SystemCallErrorNumber=` when the unit sets it, and kills the process otherwise. Like the unit's
`NoNewPrivileges=yes`, the filter is loaded with no_new_privs set. Needs pyseccomp (PyPI).
"""
import errno
import functools
import os
import subprocess
import sys

import pyseccomp as seccomp


@functools.cache
def expand(name):
    """The system calls a filter entry names: a group, recursively, or a single call."""
    if not name.startswith("@"):
        return {name}
    listing = subprocess.run(
        ["systemd-analyze", "syscall-filter", name], check=True, capture_output=True, text=True
    ).stdout
    calls = set()
    for line in listing.splitlines()[1:]:
        entry = line.strip()
        if entry and not entry.startswith("#"):
            calls |= expand(entry)
    return calls


def unit_settings(path):
    filters, error_number = [], None
    for raw in open(path, encoding="utf-8"):
        line = raw.strip()
        if line.startswith("SystemCallFilter="):
            filters.append(line.split("=", 1)[1])
        elif line.startswith("SystemCallErrorNumber="):
            error_number = line.split("=", 1)[1]
    return filters, error_number


def main():
    unit, separator, *command = sys.argv[1:]
    if separator != "--" or not command:
        sys.exit(__doc__)
    filters, error_number = unit_settings(unit)
    if not filters:
        sys.exit(f"{unit} has no SystemCallFilter=")
    allow_list = not filters[0].startswith("~")
    chosen = set()
    for value in filters:
        deny = value.startswith("~")
        calls = set().union(*(expand(name) for name in value.lstrip("~").split()))
        if deny == (not allow_list):
            chosen |= calls
        else:
            chosen -= calls
    if error_number:
        denied = seccomp.ERRNO(getattr(errno, error_number))
    else:
        denied = seccomp.KILL_PROCESS
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW if not allow_list else denied)
    for call in sorted(chosen):
        try:
            rules.add_rule(seccomp.ALLOW if allow_list else denied, call)
        except (RuntimeError, ValueError, OSError):
            pass  # not a call of this architecture; systemd skips those too
    kind = "allowed" if allow_list else "denied"
    print(
        f"sandboxed.py: {len(chosen)} calls {kind}, others "
        f"{'allowed' if not allow_list else ('fail with ' + error_number if error_number else 'kill')}",
        file=sys.stderr,
    )
    rules.load()
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
