"""Issue 12, "Reliability": each class of the adversarial pass, with more than its example.

Signals at random moments, special files as inputs and outputs, temp-file names, the
output folder, a broken standard output. Every process here is bounded by a timeout."""
from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import nkirun
from nkirun.cli import cli

from repo_paths import ROOT as _ROOT
ROOT = str(_ROOT)
ENV = {**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1", "OPENBLAS_NUM_THREADS": "1"}
NKIRUN = [sys.executable, "-m", "nkirun"]
# (its tests interrupt nkirun processes: a background test run must not make them immune)
pytestmark = pytest.mark.usefixtures("interruptible_children")
SMALL = """version: 1
tensors:
  x: {buffer: hbm, shape: [4, 8], dtype: float32, file: x.npy}
  t: {buffer: sbuf, shape: [4, 8], dtype: float32}
  y: {buffer: hbm, shape: [4, 8], dtype: float32, output: true}
instructions:
  - load: {dst: t, src: x}
  - store: {dst: y, src: t}
"""


def _nkirun(args, cwd, timeout=60, **kw):
    return subprocess.run(NKIRUN + [str(a) for a in args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout, **kw)


def _no_nkirun_traceback(err: str) -> bool:
    """No traceback, or only the interpreter's own from before nkirun's handlers were in
    place (a signal in runpy/site on a slow machine, or in the package's first statement,
    `import nkirun._startup`, which installs them: Python reports that, not nkirun; as
    test_signal_during_start_up_gives_no_traceback allows)."""
    if "Traceback" not in err:
        return True
    frames = [ln for ln in err.splitlines() if f"{os.sep}nkirun{os.sep}" in ln]
    return all("__init__.py" in ln or "_startup.py" in ln for ln in frames) and (
        "<frozen" in err or frames)


def _snapshot(folder) -> dict:
    out = {}
    for dirpath, dirnames, files in os.walk(folder):
        for name in dirnames + files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder)
            if os.path.isdir(path):
                out[rel + "/"] = None
            else:
                with open(path, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture
def small(tmp_path):
    (tmp_path / "p.yaml").write_text(SMALL)
    np.save(tmp_path / "x.npy", np.arange(32, dtype=np.float32).reshape(4, 8))
    return tmp_path


def _slow_program(folder, steps=300, outputs=4):
    tensors = {"x": {"buffer": "hbm", "shape": [128, 2048], "dtype": "float32", "fill": 1.0},
               "a": {"buffer": "sbuf", "shape": [128, 2048], "dtype": "float32"},
               "b": {"buffer": "sbuf", "shape": [128, 2048], "dtype": "float32"}}
    ins = [{"load": {"dst": "a", "src": "x"}}]
    for i in range(steps):
        src, dst = ("a", "b") if i % 2 == 0 else ("b", "a")
        ins.append({"tensor_scalar": {"dst": dst, "data": src, "op0": "multiply",
                                      "operand0": 1.0}})
    for k in range(outputs):
        tensors[f"y{k}"] = {"buffer": "hbm", "shape": [128, 2048], "dtype": "float32",
                            "output": True}
        ins.append({"store": {"dst": f"y{k}", "src": "a"}})
    (folder / "slow.yaml").write_text(yaml.safe_dump(
        {"version": 1, "tensors": tensors, "instructions": ins}, sort_keys=False))


# ---- signals ---------------------------------------------------------------------------------
def test_signals_at_random_moments_leave_out_old_or_complete(tmp_path):
    """SIGINT/SIGTERM/SIGHUP at random moments of a run (start-up, execution, writing):
    afterwards --out and --dump hold all the new files or exactly what they held, nothing
    else; the exit status is 0 or 128 + the signal; never a traceback."""
    _slow_program(tmp_path)
    out, dump = tmp_path / "out", tmp_path / "dump"
    out.mkdir()
    for k in range(4):
        np.save(out / f"y{k}.npy", np.zeros((128, 2048), np.float32))
    (out / "notes.txt").write_text("mine")
    before = _snapshot(out)
    args = NKIRUN + ["run", "slow.yaml", "--out", "out", "--dump", "dump", "--after", "2"]
    t0 = time.monotonic()
    full = subprocess.run(args, cwd=tmp_path, env=ENV, capture_output=True, timeout=120)
    span = time.monotonic() - t0
    assert full.returncode == 0, full.stderr
    complete = _snapshot(out)
    complete_dump = _snapshot(dump)
    assert complete != before and set(complete) == set(before)
    rng = random.Random(12)
    stopped = 0
    for trial in range(8):
        # put the old state back, then interrupt a run somewhere in [0, its full time]
        for k in range(4):
            np.save(out / f"y{k}.npy", np.zeros((128, 2048), np.float32))
        subprocess.run(["rm", "-rf", str(dump)], check=True)
        sig = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
        p = subprocess.Popen(args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.0, span))
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        # (-sig: the signal came while the interpreter was shutting down, all done)
        assert p.returncode in (0, 128 + sig, -sig) or (
            p.returncode == 1 and "Traceback" in err), (trial, sig, p.returncode, err)
        assert _no_nkirun_traceback(err), err
        now = _snapshot(out)
        assert now in (before, complete), (trial, sig, sorted(now))
        assert not dump.exists() or _snapshot(dump) == complete_dump
        assert sorted(os.listdir(tmp_path)) in (["out", "slow.yaml"],
                                                 ["dump", "out", "slow.yaml"])
        if p.returncode > 0 and "Traceback" not in err:  # (-sig: died after finishing)
            stopped += 1
            assert "interrupted" in err
            if now == before:
                assert "nothing was written" in err
    assert stopped  # some trials really were interrupted


def test_ctrl_c_during_execution_says_where_and_writes_nothing(tmp_path):
    _slow_program(tmp_path, steps=2000, outputs=1)
    p = subprocess.Popen(NKIRUN + ["run", "slow.yaml", "--out", "out", "--trace"],
                         cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    first = p.stderr.readline()  # the trace line of instruction 0: execution has begun
    assert first.startswith("#0 load"), first
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    import re
    assert re.search(r"nkirun: interrupted at #\d+ (tensor_scalar|load|store); nothing was "
                     r"written", err), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("delay", [0.0, 0.05, None])
def test_signals_the_command_was_started_ignoring_stay_ignored(tmp_path, delay):
    """`nohup nkirun run ... &` from a script: SIGHUP and SIGINT were ignored when nkirun
    started, so neither ends it (while starting, or once execution has begun: None); it
    finishes and writes its outputs. SIGTERM, not ignored, still ends it."""
    _slow_program(tmp_path, steps=400, outputs=1)
    ignoring = [sys.executable, "-c",
                "import os, signal, sys\n"
                "for s in (signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)\n"
                "os.write(2, b'ignoring\\n')\n"
                "os.execv(sys.executable, [sys.executable] + sys.argv[1:])\n"]
    args = ignoring + ["-m", "nkirun", "run", "slow.yaml", "--out", "out", "--trace"]
    p = subprocess.Popen(args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stderr.readline() == "ignoring\n"  # (from here on nkirun's own start)
    if delay is None:
        first = p.stderr.readline()  # the trace line of instruction 0: execution has begun
        assert first.startswith("#0 load"), first
    else:
        time.sleep(delay)
    p.send_signal(signal.SIGHUP)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert (tmp_path / "out" / "y0.npy").exists()
    p = subprocess.Popen(args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stderr.readline() == "ignoring\n"
    assert p.stderr.readline().startswith("#0 load")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1, 0.2])
def test_signal_during_start_up_gives_no_traceback(small, delay):
    p = subprocess.Popen(NKIRUN + ["check", "p.yaml"], cwd=small, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    # Inside the interpreter's own start (site, runpy), before any nkirun code runs,
    # Python itself reports the interrupt: not nkirun's to change. Once nkirun is being
    # imported, no traceback goes through nkirun's code — except the very first statement,
    # `import nkirun._startup`, which is what installs the quiet handlers.
    frames = [ln for ln in err.splitlines() if f"{os.sep}nkirun{os.sep}" in ln]
    assert all("__init__.py" in ln or "_startup.py" in ln for ln in frames), err
    if frames:
        assert "import nkirun._startup" in err or "signal.signal" in err, err
    if "Exception ignored" in err:  # the interrupt landed in a finalizer (Python reports it
        assert p.returncode in (0, 130, -signal.SIGINT), err  # and goes on)
    elif "Traceback" in err:  # the interpreter's own start: Python's report
        assert p.returncode in (1, -signal.SIGINT) and "<frozen" in err, (p.returncode, err)
    else:
        assert p.returncode in (0, 130, -signal.SIGINT), err


@pytest.mark.parametrize("cmd", ["convert", "trace"])
def test_signal_while_writing_a_file_leaves_old_or_new(tmp_path, cmd):
    _slow_program(tmp_path, steps=3000, outputs=1)
    target = tmp_path / "res.out"
    target.write_text("old")
    args = (["convert", "slow.yaml", "--to", "text", "-o", "res.out"] if cmd == "convert"
            else ["cost", "slow.yaml", "--trace-out", "res.out", "--view", "summary"])
    full = _nkirun(args, tmp_path)
    assert full.returncode == 0, full.stderr
    new = target.read_text()
    rng = random.Random(3)
    for _ in range(4):
        target.write_text("old")
        p = subprocess.Popen(NKIRUN + args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.2, 1.5))
        p.send_signal(rng.choice([signal.SIGTERM, signal.SIGHUP, signal.SIGINT]))
        _, err = p.communicate(timeout=60)
        assert _no_nkirun_traceback(err), err
        assert target.read_text() in ("old", new)
        assert sorted(os.listdir(tmp_path)) == ["res.out", "slow.yaml"]


# ---- special files as inputs: refused before opening ------------------------------------------
@pytest.mark.parametrize("where", ["file", "input", "expect", "program"])
def test_fifo_is_refused_not_waited_on(small, where):
    fifo = small / "fifo.npy"
    os.mkfifo(fifo)
    args = {"file": ["run", "p.yaml"], "input": ["run", "p.yaml", "--input", "x=fifo.npy"],
            "expect": ["run", "p.yaml", "--expect", "gold"], "program": ["check", "fifo.npy"]}
    if where == "file":
        (small / "p.yaml").write_text(SMALL.replace("file: x.npy", "file: fifo.npy"))
    if where == "expect":
        (small / "gold").mkdir()
        os.mkfifo(small / "gold" / "y.npy")
    r = _nkirun(args[where], small, timeout=30)
    assert r.returncode == 1, r.stderr
    assert "FIFO" in r.stdout + r.stderr and "Traceback" not in r.stderr


def test_fifo_and_device_refused_by_the_api(small):
    os.mkfifo(small / "fifo.npy")
    for path in (str(small / "fifo.npy"), "/dev/zero"):
        with pytest.raises(nkirun.NkirunError, match="not a .npy file"):
            nkirun.run(str(small / "p.yaml"), inputs={"x": path})
    diags = nkirun.check("/dev/zero")
    assert diags and diags[0].code == "E000" and "not a regular file" in diags[0].message


# ---- special files as outputs: streamed, never renamed over ---------------------------------
def test_outputs_to_a_fifo_stream(small):
    fifo = small / "pipe"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as f:
            got["data"] = f.read()
    th = threading.Thread(target=reader)
    th.start()
    r = _nkirun(["convert", "p.yaml", "--to", "text", "-o", "pipe"], small, timeout=30)
    th.join(30)
    assert r.returncode == 0, r.stderr
    assert b"load dst=t src=x" in got["data"]
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # still a FIFO


@pytest.mark.parametrize("cmd", [["convert", "p.yaml", "--to", "text", "-o"],
                                 ["cost", "p.yaml", "--view", "summary", "--trace-out"]])
def test_a_link_to_a_device_stays_a_link(small, cmd):
    link = small / "sink"
    os.symlink("/dev/null", link)
    r = _nkirun(cmd + ["sink"], small)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"


def test_a_link_to_a_regular_file_stays_a_link(small):
    (small / "real.nkis").write_text("old")
    os.symlink("real.nkis", small / "link.nkis")
    r = _nkirun(["convert", "p.yaml", "--to", "text", "-o", "link.nkis"], small)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(small / "link.nkis")
    assert "load dst=t" in (small / "real.nkis").read_text()


def test_convert_dash_is_standard_output(small):
    r = _nkirun(["convert", "p.yaml", "--to", "text", "-o", "-"], small)
    assert r.returncode == 0 and "load dst=t src=x" in r.stdout
    assert not (small / "-").exists()


# ---- temporary names: unpredictable, exclusive, in the destination folder ---------------------
def test_planted_temp_names_are_not_followed(small, monkeypatch):
    monkeypatch.chdir(small)
    victim = small / "victim.txt"
    victim.write_text("keep me")
    pid = os.getpid()
    for name in (f"res.nkis.tmp{pid}", "res.nkis.tmp", f".res.nkis.tmp{pid}"):
        os.symlink(victim, small / name)
    os.mkdir(small / f"res.nkis.{pid}.tmp")
    r = CliRunner().invoke(cli, ["convert", "p.yaml", "--to", "text", "-o", "res.nkis"])
    assert r.exit_code == 0, r.output
    assert victim.read_text() == "keep me"
    assert "load dst=t" in (small / "res.nkis").read_text()


def test_output_files_get_the_umask_mode(small):
    old = os.umask(0o077)
    try:
        r = _nkirun(["convert", "p.yaml", "--to", "text", "-o", "res.nkis"], small)
        r2 = _nkirun(["run", "p.yaml", "--out", "o"], small)
    finally:
        os.umask(old)
    assert r.returncode == 0 and r2.returncode == 0
    assert (small / "res.nkis").stat().st_mode & 0o777 == 0o600
    assert (small / "o" / "y.npy").stat().st_mode & 0o777 == 0o600
    assert "wrote res.nkis" in r.stderr  # says where it wrote


# ---- the output folder ------------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["--out", "--dump", "--expect"])
def test_empty_folder_name_is_refused(small, flag):
    r = _nkirun(["run", "p.yaml", flag, ""], small)
    assert r.returncode == 2 and "empty" in r.stderr
    assert sorted(os.listdir(small)) == ["p.yaml", "x.npy"]


@pytest.mark.parametrize("name", ["..yaml", "...yaml", ".yaml", "..nkis"])
def test_default_out_folder_stays_inside_out(small, name):
    text = SMALL
    if name.endswith(".nkis"):
        text = _nkirun(["convert", "p.yaml", "--to", "text"], small).stdout
    (small / name).write_text(text)
    r = _nkirun(["run", name], small)
    assert r.returncode == 0, r.stderr
    assert not (small / "y.npy").exists() and not (small / "out" / "y.npy").exists()
    found = [os.path.relpath(os.path.join(d, f), small) for d, _, fs in os.walk(small / "out")
             for f in fs]
    assert len(found) == 1 and found[0].startswith("out" + os.sep)


def test_failed_write_into_new_nested_folder_leaves_no_folders(small, monkeypatch):
    import nkirun.runner.files as files
    real = files.np.save

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files.np, "save", full_disk)
    monkeypatch.chdir(small)
    r = CliRunner().invoke(cli, ["run", "p.yaml", "--out", "a/b/c"])
    monkeypatch.setattr(files.np, "save", real)
    assert r.exit_code == 1 and "E080" in r.output
    assert not (small / "a").exists()


def test_failed_dump_into_new_nested_folder_leaves_no_folders(small, monkeypatch):
    monkeypatch.chdir(small)
    # the run fails before anything is dumped: a missing input file
    (small / "x.npy").unlink()
    r = CliRunner().invoke(cli, ["run", "p.yaml", "--dump", "d1/d2/dump"])
    assert r.exit_code == 1
    assert sorted(os.listdir(small)) == ["p.yaml"]


# ---- a broken standard output: a quiet exit ---------------------------------------------------
@pytest.mark.parametrize("args", [["--help"], ["check", "p.yaml"], ["explain", "memset"],
                                  ["schema"], ["cost", "p.yaml"], ["ops"],
                                  ["convert", "p.yaml", "--to", "yaml"]])
@pytest.mark.parametrize("stdout", ["closed", "full", "pipe"])
def test_broken_stdout_exits_quietly(small, args, stdout):
    if stdout == "closed":
        r = subprocess.run(NKIRUN + args, cwd=small, env=ENV, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=60,
                           preexec_fn=lambda: os.close(1))
    elif stdout == "full":
        with open("/dev/full", "w") as full:
            r = subprocess.run(NKIRUN + args, cwd=small, env=ENV, stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
    else:  # `| head -c 1`: the reader goes away after one byte
        p = subprocess.Popen(NKIRUN + args, cwd=small, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, bufsize=0)
        p.stdout.read(1)
        p.stdout.close()
        err = p.stderr.read()
        p.wait(60)
        r = subprocess.CompletedProcess(args, p.returncode, "", err)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    assert "internal error" not in r.stderr


@pytest.mark.parametrize("cmd", [["convert", "p.yaml", "--to", "text", "-o", "/dev/stdout"],
                                 ["cost", "p.yaml", "--view", "summary", "--trace-out",
                                  "/dev/stdout"]])
def test_dev_stdout_is_streamed_not_replaced(small, cmd):
    before = os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None
    r = _nkirun(cmd, small)
    assert r.returncode == 0, r.stderr
    assert ("load dst=t src=x" in r.stdout) if cmd[0] == "convert" else (
        '"traceEvents"' in r.stdout)
    if before is not None:  # the device link is still the device link
        assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before


# ---- a signal that another thread takes ------------------------------------------------------
def _sigint_from_another_thread():
    """A thread started now (so its signal mask is the process's, as OpenBLAS's workers'
    is) that sends SIGINT to the process when `go` is set. The kernel hands a process
    signal to a thread that does not block it: this one, while the main thread holds."""
    go = threading.Event()

    def send():
        go.wait(10)
        os.kill(os.getpid(), signal.SIGINT)
    t = threading.Thread(target=send)
    t.start()
    return go, t


def test_a_signal_another_thread_takes_is_held_too():
    from nkirun import safeio
    go, t = _sigint_from_another_thread()
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with safeio.signals_held():
            go.set()
            t.join()
            time.sleep(0.05)  # time enough for the handler to run, were it not held
            reached.append("end of the held block")
    assert reached  # the interrupt came after the block, not inside it


def test_ctrl_c_while_the_backups_are_removed_leaves_no_bak(tmp_path, monkeypatch):
    """Ctrl-C (taken by another thread) after the new outputs are in place: the old
    outputs' hard-link backups were left in --out as `.y.npy.<hex>.bak`."""
    from nkirun.runner import outputs
    old = np.full((4, 8), 99, np.float32)
    for name in ("y", "z"):
        np.save(tmp_path / f"{name}.npy", old)
    go, t = _sigint_from_another_thread()
    real = outputs._unlink

    def unlink_then_interrupt(path):
        real(path)
        if not go.is_set():
            go.set()
            t.join()
            time.sleep(0.05)
    monkeypatch.setattr(outputs, "_unlink", unlink_then_interrupt)
    new = np.ones((4, 8), np.float32)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_outputs({"y": new, "z": new}, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["y.npy", "z.npy"]
    assert all(np.array_equal(np.load(tmp_path / f), new) for f in ("y.npy", "z.npy"))


def test_signals_after_the_work_take_their_default_action(monkeypatch):
    """Once run_main has its exit code, SIGTERM/SIGHUP/SIGINT no longer raise (a SIGHUP in
    the interpreter's shutdown used to print a Terminated traceback from threading)."""
    import click

    from nkirun import entry

    @click.group()
    def group():
        pass

    @group.command()
    def noop():
        pass

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with pytest.raises(SystemExit) as done:
            entry.run_main(group, ["noop"])
        assert done.value.code == 0
        assert all(signal.getsignal(s) == signal.SIG_DFL for s in saved)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
