"""judge_hostile_probe.py - a hostile submission for tests/e2e/judge_hostile.sh.

Copied into each probe submission with probe.json (paths on the judge's
machine that a hostile competitor could know or guess). `python3 probe.py
MODE` tries one family of attacks, prints a line for each that worked
("LEAK <route>", "BINWRITE", "DBWRITE", "OTHERS", "POISON"), and leaves a
fake model (write_model.py, the judge tests' helper) whose metadata gives
the bpb the judge's fake `tempo eval` reports.
"""
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.environ.get("TEMPO_SUBMISSION_DIR", ".")
CFG = json.load(open(os.path.join(HERE, "probe.json")))
OUT = os.environ["TEMPO_OUT_DIR"]
MODEL = os.path.join(OUT, "model.safetensors")


def say(*words):
    print(*words, flush=True)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20)
    except OSError:
        return b""


def model(path, bpb):
    """A fake model whose judge-side bpb is bpb, written atomically."""
    tmp = path + ".part"
    subprocess.run([sys.executable, os.path.join(HERE, "write_model.py"), tmp, "ok", str(bpb)], check=True)
    os.replace(tmp, path)


def check(route, data):
    if CFG["marker"].encode() in data:
        say("LEAK", route)


def read_validation():
    check("absolute-path", read(CFG["val"]))
    bin_dir = os.path.dirname(os.environ.get("TEMPO_BIN", "/"))
    check("relative-to-TEMPO_BIN", read(os.path.normpath(os.path.join(bin_dir, CFG["val_rel_to_bin"]))))
    ppid = os.getppid()
    args = read("/proc/%d/cmdline" % ppid).split(b"\0")
    for i, a in enumerate(args[:-1]):
        if a == b"--val":
            check("proc-cmdline", read(args[i + 1].decode(errors="replace")))
    check("proc-cwd", read("/proc/%d/cwd/%s" % (ppid, os.path.basename(CFG["val"]))))
    env = read("/proc/%d/environ" % ppid)
    if CFG["env_marker"].encode() in env:
        say("LEAK judge-environment")
    found = subprocess.run(["find", "/", "-maxdepth", "6", "-path", "/proc", "-prune", "-o", "-name",
                            "val_marker*", "-print"], capture_output=True, text=True).stdout.split()
    for path in found:
        check("find", read(path))


def replace_binary():
    fake = '#!/bin/sh\necho \'{"bpb": 0.0042, "bits": 1, "bytes": 1000, "tokens": 400}\'\n'
    target = os.environ.get("TEMPO_BIN", "")
    try:
        with open(target, "w") as f:
            f.write(fake)
        say("BINWRITE")
    except OSError:
        pass


def forge_leaderboard():
    try:
        import sqlite3
        db = sqlite3.connect(CFG["db"], timeout=2)
        db.execute("UPDATE attempts SET reason = 'forged by a submission'")
        db.commit()
        db.close()
        say("DBWRITE")
    except Exception:
        pass
    mine = os.path.dirname(os.path.dirname(OUT))
    try:
        for name in os.listdir(CFG["work"]):
            other = os.path.join(CFG["work"], name)
            if other == mine or name == "data" or not os.path.isdir(other):
                continue
            with open(os.path.join(other, "planted-by-a-submission"), "w") as f:
                f.write("x")
            say("OTHERS")
    except OSError:
        pass


def network():
    try:
        with socket.create_connection(("127.0.0.1", CFG["port"]), timeout=2) as s:
            s.sendall(b"hello from the sandbox\n")
        say("LEAK network")
    except OSError:
        pass
    try:  # its own loopback works
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        c = socket.create_connection(srv.getsockname(), timeout=2)
        a, _ = srv.accept()
        c.sendall(b"x")
        if a.recv(1) == b"x":
            say("LOOPBACK-OK")
    except OSError as e:
        say("loopback failed:", e)


def poison_data():
    data = os.environ["TEMPO_DATA_DIR"]
    victim = os.path.join(data, "train.tok")
    try:
        with open(victim, "ab") as f:
            f.write(b"poison")
        digest = hashlib.sha256(read(victim)).hexdigest()
        record = data.rstrip("/") + ".sha256"
        lines = read(record).decode().splitlines()
        with open(record, "w") as f:
            for line in lines:
                f.write((digest + "  train.tok" if line.endswith("train.tok") else line) + "\n")
        say("POISON")
    except OSError:
        pass


def linger(seconds):
    """A setsid grandchild, out of the process group, with the marker in its command line."""
    subprocess.Popen(["sh", "-c", ": %s; sleep %d" % (CFG["proc_marker"], seconds)], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def swap_after_deadline():
    """Write model A now; a setsid child writes model B over the output and the judge's
    scored copy from just after the deadline on, for 120 s (the test kills it sooner: it
    must still be alive when an unsandboxed run ends, however slow a busy machine makes
    the judge's grace and scoring; 10 s was not, once, with a training run beside CI)."""
    model(MODEL, 4.386)
    scored = os.path.join(os.path.dirname(OUT), "scored", "model.safetensors")
    code = ("import os, subprocess, sys, time\n"
            "deadline = float(os.environ['TEMPO_DEADLINE_UNIX'])\n"
            "while time.time() < deadline + 0.15: time.sleep(0.01)\n"
            "end = time.time() + 120\n"
            "while time.time() < end:\n"
            "    for dst in sys.argv[1:]:\n"
            "        try:\n"
            "            subprocess.run([sys.executable, %r, dst + '.b', 'ok', '0.5'], check=True)\n"
            "            os.replace(dst + '.b', dst)\n"
            "        except Exception: pass\n" % os.path.join(HERE, "write_model.py"))
    subprocess.Popen([sys.executable, "-c", code + "# " + CFG["proc_marker"], MODEL, scored],
                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the judge waits out its grace before SIGKILL
    time.sleep(600)


def main():
    mode = sys.argv[1]
    if mode == "everything":
        read_validation()
        replace_binary()
        forge_leaderboard()
        network()
        poison_data()
        model(MODEL, 3.0)
    elif mode == "deadline":
        swap_after_deadline()
    elif mode == "orphan":
        linger(600)
        model(MODEL, 3.0)
    elif mode == "linger":
        linger(600)
        say("lingering")
        time.sleep(600)
    elif mode == "traps":
        # files the judge reads after the run: a fifo (would block it) and links out of the sandbox
        os.mkfifo(os.path.join(OUT, "result.json"))
        os.symlink(CFG["val"], os.path.join(OUT, "metrics.jsonl"))
        model(os.path.join(OUT, "real.safetensors"), 3.0)
        os.symlink("real.safetensors", MODEL)
    elif mode == "fork":
        kids = []
        for _ in range(int(sys.argv[2])):
            try:
                kids.append(subprocess.Popen(["sleep", "30"]))
            except OSError:
                time.sleep(0.05)
        time.sleep(1)
        model(MODEL, 3.0)
        for k in kids:
            k.send_signal(signal.SIGKILL)
    elif mode == "disk":
        for i in range(4):
            with open(os.path.join(OUT, "blob%d" % i), "wb") as f:
                f.write(os.urandom(16 << 20))
        time.sleep(1.5)
        model(MODEL, 3.0)
    elif mode == "memory":
        block = bytearray(int(float(sys.argv[2]) * (1 << 30)))
        block[::4096] = b"x" * len(block[::4096])
        model(MODEL, 3.0)


if __name__ == "__main__":
    main()
