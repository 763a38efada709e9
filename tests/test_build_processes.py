"""A build killed from outside (SIGKILL) at any moment leaves no process behind and no lock
held: the next build of the module takes the lock over, says so, and finishes. A build that
waits on a live build's lock says which process holds it."""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from helpers import robot_path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

ALGORITHMS = "rnea,crba,aba,minv,aba_derivatives"
BUILD = ("import sys, rbdgen\n"
         "rbdgen.build(sys.argv[1], out_dir=sys.argv[2], algorithms=sys.argv[3].split(','), "
         "parameters=['gravity'], progress=lambda line: print(line, flush=True))\n"
         "print('built', flush=True)\n")
# how long the processes of a killed build may take to go (the kernel's SIGKILL of each child)
ORPHAN_SECONDS = 10
NEXT_BUILD_SECONDS = 240
# how long a forked child may wait to be scheduled after its parent's death (a loaded machine)
CHILD_SCHEDULED_SECONDS = 5


def start_build(folder, marker):
    env = dict(os.environ, RBDGEN_BUILD_MARKER=marker)
    return subprocess.Popen([sys.executable, "-c", BUILD, robot_path("ur5"), str(folder), ALGORITHMS],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def marked_processes(marker):
    """The processes whose environment holds the marker (a build, its workers, their compilers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"RBDGEN_BUILD_MARKER={marker}".encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def kill_at(folder, moment):
    """Start a build and SIGKILL it on the first progress line that starts with `moment`;
    return the build's output so far."""
    marker = uuid.uuid4().hex
    build = start_build(folder, marker)
    seen = []
    for line in build.stdout:
        seen.append(line)
        if line.lstrip().startswith(moment) or (moment == "operations" and " operations " in line):
            build.send_signal(signal.SIGKILL)
            break
    build.wait()
    assert build.returncode == -signal.SIGKILL, f"the build ended before {moment!r}:\n{''.join(seen)}"
    deadline = time.monotonic() + ORPHAN_SECONDS
    while marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked_processes(marker) == [], f"processes of the build killed at {moment!r} are still running"
    return "".join(seen)


@pytest.mark.parametrize("moment", ["loaded", "operations", "linked"])
def test_killed_build_leaves_nothing_behind(tmp_path, moment):
    """Killed while reading the robot, while its workers generate and compile, while it links
    and verifies in the main process: no orphan, and the next build finishes."""
    kill_at(tmp_path, moment)
    marker = uuid.uuid4().hex
    build = start_build(tmp_path, marker)
    try:
        output, _ = build.communicate(timeout=NEXT_BUILD_SECONDS)
    except subprocess.TimeoutExpired:
        build.kill()
        pytest.fail(f"the build after one killed at {moment!r} did not finish: the lock is held")
    assert build.returncode == 0 and output.rstrip().endswith("built"), output
    if moment != "loaded":   # (read before the lock is taken)
        assert "taking over the lock of a build that was killed (process" in output, output
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".ur5-")], "a temporary folder was left"
    assert marked_processes(marker) == []


def test_waiting_build_names_the_holder(tmp_path):
    """A build that finds the module's lock held waits, and says by which process; it goes on
    once the holder releases the lock."""
    from rbdgen.codegen import cache
    lines = []
    with cache.locked(str(tmp_path), "ur5", say=lines.append):
        marker = uuid.uuid4().hex
        build = start_build(tmp_path, marker)
        waiting = build.stdout.readline()
        if waiting.startswith("loaded "):
            waiting = build.stdout.readline()
        assert waiting.startswith("ur5: waiting for another build of it to finish (process "
                                  f"{os.getpid()} on "), waiting
        assert build.poll() is None
    output, _ = build.communicate(timeout=NEXT_BUILD_SECONDS)
    assert build.returncode == 0 and "taking over" not in output, output
    assert lines == []


def test_forked_children_do_not_keep_the_lock(tmp_path):
    """A process forked while a build holds its lock (a compile worker, or any other) does not
    hold the lock: when the builder is killed, the lock is free however long the child lives."""
    import fcntl
    holder = ("import os, signal, sys, time\n"
              "from rbdgen.codegen import cache\n"
              "with cache.locked(sys.argv[1], 'robot'):\n"
              "    if os.fork() == 0:\n"
              "        time.sleep(30)\n"
              "        os._exit(0)\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n")
    marker = uuid.uuid4().hex
    subprocess.run([sys.executable, "-c", holder, str(tmp_path)], env=dict(os.environ, RBDGEN_BUILD_MARKER=marker))
    try:
        assert len(marked_processes(marker)) == 1   # the child, alive
        fd = os.open(os.path.join(tmp_path, ".robot.lock"), os.O_RDWR)
        try:
            # the child lets go of it once it runs (os.register_at_fork), which a loaded machine
            # may schedule after its parent's death: BlockingIOError if it kept it
            deadline = time.monotonic() + CHILD_SCHEDULED_SECONDS
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            os.close(fd)
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)
