#!/usr/bin/env python3
# Time to first frame and resident memory of a terminal UI: runs ARGV in a 100x30 pseudo-terminal
# in DIR five times, answers the terminal queries a terminal would (cursor position, device
# attributes), and reports when 40 visible characters are on screen and VmRSS 2 s later.
# Usage: bench/tui-first-frame.py DIR PROGRAM [ARGS...]
import os, pty, time, select, sys, re, fcntl, termios, struct, signal
ESC = re.compile(rb'\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]')
def run(argv, cwd, env, need=40, timeout=30):
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
    start = time.time(); buf = b''; t = None
    while time.time() - start < timeout:
        r, _, _ = select.select([fd], [], [], 0.02)
        if not r: continue
        try: data = os.read(fd, 65536)
        except OSError: break
        buf += data
        for _ in range(data.count(b'\x1b[6n')): os.write(fd, b'\x1b[1;1R')
        if b'\x1b[c' in data or b'\x1b[0c' in data: os.write(fd, b'\x1b[?62;c')
        visible = ESC.sub(b'', buf)
        if t is None and len(bytes(c for c in visible if c > 32)) >= need:
            t = time.time() - start
            break
    time.sleep(2)
    rss = None
    try:
        for line in open(f'/proc/{pid}/status'):
            if line.startswith('VmRSS'): rss = line.split()[1]
    except Exception: pass
    try: os.kill(pid, signal.SIGKILL)
    except Exception: pass
    os.waitpid(pid, 0)
    return t, rss
if __name__ == '__main__':
    cwd = sys.argv[1]; argv = sys.argv[2:]
    env = dict(os.environ, TERM='xterm-256color')
    results = [run(argv, cwd, env) for _ in range(5)]
    times = sorted(r[0] for r in results if r[0] is not None)
    print(argv[0].split('/')[-1], 'first frame ms:', [round(x*1000) for x in times], 'median', round(times[len(times)//2]*1000) if times else None, 'rss KiB:', [r[1] for r in results])
