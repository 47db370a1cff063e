# Regression tests for the defects of issue 16 in the custom-metrics socket
# (docs/metrics.md, docs/testing.md).

# 16.13: a zero-length message read as EOF closed the connection, and the
# client's next metric was lost without being counted
test_a_zero_length_message_does_not_close_the_connection() {
    "$JS" run -o ev.jsonl -- python3 -c '
import os, socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(os.environ["JOBSCOPE_SOCKET"])
s.send(b"")
time.sleep(0.3)
s.send(b"M1\tafter.empty\t1\t\t1\t%d\t0" % os.getpid())
time.sleep(0.3)
' || return 1
    assert_eq "$(jq_py '[e["name"] for e in ev if e["event"]=="jobscope.metric"]' ev.jsonl)" '["after.empty"]'
}

# 16.13: 4,096 idle connections from one process used to fill every slot, so
# every other process's metrics were dropped
test_one_process_cannot_take_every_connection() {
    "$JS" run -o ev.jsonl -- python3 -c '
import os, resource, socket, subprocess, time
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
hog = []
for i in range(4200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(os.environ["JOBSCOPE_SOCKET"])
    except OSError:
        break
    hog.append(s)
time.sleep(0.5)
subprocess.run(["python3", "-c", """
import os, socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(os.environ["JOBSCOPE_SOCKET"])
try:
    s.send(b"M1\\tfrom.other\\t1\\t\\t1\\t%d\\t0" % os.getpid())
except OSError as e:
    print("send:", e)
time.sleep(0.2)
"""])
time.sleep(0.2)
' || return 1
    assert_eq "$(jq_py '[e["name"] for e in ev if e["event"]=="jobscope.metric"]' ev.jsonl)" '["from.other"]'
}
