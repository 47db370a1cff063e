#!/usr/bin/env python3
"""serve_attack.py — hostile clients of `jobscope serve` for
tests/integration/89_serve_attack.sh (issue 23).  Every loop is bounded in
count and time and talks to loopback only.

  serve_attack.py slowloris PORT SRC_ADDR N SECONDS
      N connections from SRC_ADDR (another loopback address) each sending
      one more header line every second, never finishing; meanwhile
      127.0.0.1 asks /api/version once a second.  Prints
      "ok=A late=B refused=C cut=D": answers in time, answers later than
      2 s or none, attacker connections refused, attacker connections the
      server closed.
  serve_attack.py cut PORT SECONDS
      one connection sending a header line every 0.5 s: prints the seconds
      after which the server closed it, or "open".
  serve_attack.py unauth_body PORT DECLARED SENT
      a POST without token declaring DECLARED body bytes, sends SENT of
      them, then waits 3 s: prints the status line (or "none").
  serve_attack.py held_bodies PORT PID N DECLARED SENT [TOKEN]
      N clients each declaring DECLARED bytes and sending SENT of them,
      holding them open; prints "rss_kb=R statuses=S" (the server's peak RSS
      while they are held, and the answers the clients got by then).
"""
import os, socket, sys, time


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def version_ok(port, timeout=2.0):
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.settimeout(timeout)
        s.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        d = s.recv(64)
        s.close()
        return d.startswith(b"HTTP/1.1 ") and time.time() - t0 <= timeout
    except OSError:
        return False


def slowloris(port, src, n, secs):
    conns, refused = [], 0
    for i in range(n):
        try:
            s = socket.socket()
            s.bind((src, 0))
            s.settimeout(1)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\n")
            conns.append(s)
        except OSError:
            refused += 1
    ok = late = cut = 0
    end = time.time() + secs
    k = 0
    while time.time() < end:
        for s in list(conns):
            try:
                s.setblocking(False)
                try:
                    d = s.recv(4096)
                    if not d:
                        raise OSError("closed")
                    # an answer (408/503): the server let it go
                    raise OSError("answered")
                except BlockingIOError:
                    pass
                s.sendall(b"X-a%d: b\r\n" % k)
            except OSError:
                cut += 1
                conns.remove(s)
                s.close()
        k += 1
        if version_ok(port):
            ok += 1
        else:
            late += 1
        time.sleep(max(0, 1 - 0.01))
    for s in conns:
        s.close()
    # a connection refused by the server's per-client limit is accepted and
    # closed at once: count those as refused too
    print("ok=%d late=%d refused=%d cut=%d" % (ok, late, refused, cut))


def cut(port, secs):
    s = socket.create_connection(("127.0.0.1", port), timeout=1)
    s.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\n")
    t0 = time.time()
    while time.time() - t0 < secs:
        try:
            s.sendall(b"X-slow: 1\r\n")
            s.setblocking(False)
            try:
                d = s.recv(4096)
                if not d or d:
                    print("%.1f" % (time.time() - t0))
                    return
            except BlockingIOError:
                pass
            s.setblocking(True)
        except OSError:
            print("%.1f" % (time.time() - t0))
            return
        time.sleep(0.5)
    print("open")


def post_head(port, declared, token=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    h = "POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % declared
    if token:
        h += "Authorization: Bearer %s\r\n" % token
    s.sendall((h + "\r\n").encode())
    return s


def send_some(s, n):
    chunk = b"[" + b" " * 65535
    sent = 0
    while sent < n:
        k = min(len(chunk), n - sent)
        try:
            s.sendall(chunk[:k])
        except OSError:
            return sent
        sent += k
    return sent


def status_of(s, wait):
    s.settimeout(wait)
    try:
        d = s.recv(200)
        return d.split(b"\r\n")[0].decode() if d else "closed"
    except socket.timeout:
        return "none"
    except OSError:
        return "closed"


def unauth_body(port, declared, sent):
    s = post_head(port, declared)
    s.settimeout(3)
    send_some(s, sent)
    print(status_of(s, 3))


def held_bodies(port, pid, n, declared, sent, token):
    socks = []
    for i in range(n):
        try:
            s = post_head(port, declared, token)
            s.settimeout(5)
            send_some(s, sent)
            socks.append(s)
        except OSError:
            pass
    peak = 0
    for _ in range(10):
        peak = max(peak, rss_kb(pid))
        time.sleep(0.1)
    st = []
    for s in socks:
        line = status_of(s, 0.2)
        st.append(line.split(" ")[1] if line.startswith("HTTP/") else line)
    for s in socks:
        s.close()
    print("rss_kb=%d statuses=%s" % (peak, ",".join(sorted(st))))


def main():
    a = sys.argv[1:]
    if a[0] == "slowloris":
        slowloris(int(a[1]), a[2], int(a[3]), float(a[4]))
    elif a[0] == "cut":
        cut(int(a[1]), float(a[2]))
    elif a[0] == "unauth_body":
        unauth_body(int(a[1]), int(a[2]), int(a[3]))
    elif a[0] == "held_bodies":
        held_bodies(int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6] if len(a) > 6 else None)


if __name__ == "__main__":
    main()
