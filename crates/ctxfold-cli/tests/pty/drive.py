"""Drive an interactive program in a pseudo-terminal, as a user at a
terminal would: wait for text on the screen, type, press keys.

    drive.py SCRIPT -- COMMAND ARGS...

SCRIPT is a JSON list of steps, each one of
    {"wait": "TEXT", "timeout": SECONDS}   until TEXT is on the screen
    {"type": "TEXT"}                       type TEXT (then nothing else)
    {"key": "enter" | "ctrl-c" | "ctrl-d"} press a key
    {"sleep": SECONDS}
Then it waits for the program to end (60 s at most) and prints one JSON
line: {"exit": CODE or null, "signal": N or null, "failed": STEP or null,
"screen": the last 8,000 characters of what it printed, escape
sequences left out}. Text is waited for in what it printed without its
escape sequences and blank space. Exit status 0 when every
step held, 1 otherwise.
"""
import json, os, pty, re, select, signal, sys, time

# Escape sequences (CSI, OSC, the two-byte ones): a screen's text is what
# is left, in the order it was written.
ESCAPES = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_()][0-9A-Za-z]?)")

KEYS = {"enter": b"\r", "ctrl-c": b"\x03", "ctrl-d": b"\x04", "escape": b"\x1b"}


def main():
    script = json.loads(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.environ.setdefault("COLUMNS", "120")
        os.environ.setdefault("LINES", "40")
        os.execvp(command[0], command)
    # A screen big enough for the agent's interface.
    import fcntl, struct, termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    out = bytearray()

    def pump(seconds):
        end = time.time() + seconds
        while True:
            left = end - time.time()
            if left <= 0:
                return True
            r, _, _ = select.select([fd], [], [], min(left, 0.2))
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    return False
                if not chunk:
                    return False
                out.extend(chunk)

    def screen():
        return ESCAPES.sub(b"", bytes(out)).decode("utf-8", "replace")

    failed = None
    for step in script:
        if "wait" in step:
            end = time.time() + step.get("timeout", 60)
            # Without blank space: a screen places words by moving the
            # cursor as often as by writing spaces.
            needle = re.sub(r"\s+", "", step["wait"])
            seen = lambda: needle in re.sub(r"\s+", "", screen())
            while not seen():
                if time.time() > end or not pump(0.5) and not seen():
                    failed = step
                    break
            if failed:
                break
        elif "type" in step:
            for ch in step["type"]:
                os.write(fd, ch.encode())
                pump(0.01)
        elif "key" in step:
            os.write(fd, KEYS[step["key"]])
            pump(0.3)
        elif "sleep" in step:
            pump(step["sleep"])
    code = sig = None
    end = time.time() + (5 if failed else 60)
    while time.time() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        pump(0.2)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    pump(0.2)
    if code is not None and code < 0:
        code, sig = None, -code
    print(json.dumps({"exit": code, "signal": sig, "failed": failed, "screen": screen()[-8000:]}))
    sys.exit(0 if failed is None and code is not None else 1)


main()
