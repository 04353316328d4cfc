#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs a command as a terminal starts a job and says how it ended.

    sigrun.py [--pty [--tostop]] [--ctrl-c-when FILE] [--head1] [--core] STATUS PIDFILE CMD...

For tools/tests/cli_guest.sh's signal tests.  CMD runs in a session of its
own, with SIGINT, SIGQUIT and SIGPIPE at their defaults (a script's "&"
ignores the first two); its pid goes into PIDFILE once it runs.  Its wait
status goes into STATUS when it has ended: "signal N" (" core" added when
it dumped one) or "exit N" -- what bash's $? (128 + N either way) cannot
tell apart.

--pty: CMD's controlling terminal is a new pseudo-terminal, CMD the
foreground job on it; with --ctrl-c-when FILE, Ctrl-C is typed on it once
FILE exists: the line discipline sends SIGINT to the foreground process
group, from the kernel, as a user's Ctrl-C does.  --tostop: the terminal
is set `stty tostop`: a write there from a background job stops it
(SIGTTOU).
--head1: CMD's stdout and stderr are one pipe, of which one line is read
before it is closed, as in `CMD 2>&1 | head -1`.
--core: CMD may dump a core (RLIMIT_CORE at its hard limit; else 0).
"""
import os
import resource
import select
import signal
import sys


def child(cmd, core, tostop=False):
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)
    if tostop:
        import termios
        attrs = termios.tcgetattr(0)
        attrs[3] |= termios.TOSTOP
        termios.tcsetattr(0, termios.TCSANOW, attrs)
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    resource.setrlimit(resource.RLIMIT_CORE, (hard if core else 0, hard))
    os.execvp(cmd[0], cmd)


def main():
    args = sys.argv[1:]
    use_pty = head1 = core = tostop = False
    ctrl_c = None
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a == "--pty":
            use_pty = True
        elif a == "--ctrl-c-when":
            ctrl_c = args.pop(0)
        elif a == "--head1":
            head1 = True
        elif a == "--core":
            core = True
        elif a == "--tostop":
            tostop = True
        else:
            sys.exit(f"sigrun.py: unknown option {a}")
    status_file, pid_file, cmd = args[0], args[1], args[2:]

    master = read_end = None
    if use_pty:
        import pty
        pid, master = pty.fork()
        if pid == 0:
            child(cmd, core, tostop)
    elif head1:
        read_end, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.setsid()
            os.dup2(w, 1)
            os.dup2(w, 2)
            os.close(w)
            os.close(read_end)
            child(cmd, core)
        os.close(w)
    else:
        pid = os.fork()
        if pid == 0:
            os.setsid()
            child(cmd, core)
    with open(pid_file + ".tmp", "w") as f:
        f.write(f"{pid}\n")
    os.rename(pid_file + ".tmp", pid_file)

    if head1:
        line = b""
        while not line.endswith(b"\n"):
            b = os.read(read_end, 1)
            if not b:
                break
            line += b
        os.close(read_end)
    status = None
    typed = False
    while status is None:
        if master is not None:
            # Read what it writes (a full pty would block it).
            r, _, _ = select.select([master], [], [], 0.05)
            if r:
                try:
                    os.read(master, 4096)
                except OSError:
                    pass
            if ctrl_c and not typed and os.path.exists(ctrl_c):
                os.write(master, b"\x03")
                typed = True
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        else:
            _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        text = f"signal {os.WTERMSIG(status)}"
        if os.WCOREDUMP(status):
            text += " core"
    else:
        text = f"exit {os.WEXITSTATUS(status)}"
    with open(status_file, "w") as f:
        f.write(text + "\n")


main()
