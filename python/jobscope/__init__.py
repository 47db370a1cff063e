"""jobscope -- custom metrics from inside a job monitored by `jobscope run`.

Standard library only: put the python/ folder on PYTHONPATH (or `make install`).

    import jobscope
    jobscope.metric("loss", 0.13)                    # level 1, now
    jobscope.metric("loss", 0.13, phase="train")     # tags
    jobscope.metric("loss", 0.13, _level=2, _ts=t)   # telemetry level, timestamp

Dragon-compatible (switch by changing the import):

    from jobscope.dragon import Telemetry     # or: from jobscope import Telemetry
    dt = Telemetry()
    dt.add_data("predicted", 3.2, telemetry_level=2, tagk="gpu", tagv="0")

Every call becomes a `jobscope.metric` event; the end-of-job record gets
count/min/max/mean/last per name.  Calls never raise and never block: without
a monitor (JOBSCOPE_SOCKET unset) they do nothing, a metric above the run's
telemetry level is dropped here, and when the monitor falls behind a metric
is dropped and counted.  Safe from threads and across fork().  Wire format:
docs/metrics.md.
"""

import math
import os
import socket
import threading
import time

__all__ = ["metric", "payload", "enabled", "dropped", "Telemetry"]

_lock = threading.Lock()
_sock = None          # connected SOCK_SEQPACKET socket
_sock_pid = None      # the process that made it (a forked child reconnects)
_dead = False
_lost = 0             # not yet reported to the monitor
_lost_total = 0
_path = os.environ.get("JOBSCOPE_SOCKET") or None
try:
    _maxlevel = int(os.environ.get("JOBSCOPE_TELEMETRY_LEVEL", "")) \
        if os.environ.get("JOBSCOPE_TELEMETRY_LEVEL") else 1 << 30
except ValueError:
    _maxlevel = 1 << 30


def _after_fork_in_child():
    global _lock, _lost, _lost_total
    _lock = threading.Lock()        # another thread may have held it at fork
    _lost = _lost_total = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _conn():
    global _sock, _sock_pid, _dead
    pid = os.getpid()
    s = _sock
    if s is not None and _sock_pid == pid:
        return s
    with _lock:
        if _sock is not None and _sock_pid == pid:
            return _sock
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            except OSError:
                pass
            s.connect(_path)
        except (FileNotFoundError, ConnectionRefusedError):
            _dead = True
            return None
        except OSError:
            return None
        _sock, _sock_pid = s, pid
        return s


def _send(data):
    global _lost, _lost_total, _dead
    s = _conn()
    if s is not None:
        try:
            s.send(data)
            return True
        except (BrokenPipeError, ConnectionResetError, ConnectionRefusedError):
            _dead = True
        except OSError:
            pass
    _lost_total += 1
    return False


def _clean(x):
    # tag values carry no control characters (the monitor refuses them)
    return "".join(" " if ord(c) < 0x20 or c == "\x7f" else c for c in str(x))


def enabled(level=1):
    """True if a metric of this level would be sent now."""
    return _path is not None and not _dead and level <= _maxlevel


def dropped():
    """Metrics this process could not hand over."""
    return _lost_total


def metric(name, value, _level=1, _ts=None, **tags):
    """Send one metric: name (A-Z a-z 0-9 _ . : / -), a number, tags as
    keyword arguments.  Returns True if it was handed to the monitor."""
    global _lost
    if _path is None or _dead or _level > _maxlevel:
        return False
    try:
        v = float(value)
        ts = time.time() if _ts is None else float(_ts)
        lost, _lost = _lost, 0
        parts = ["M1", str(name), repr(v) if math.isfinite(v) else "nan",
                 "%.6f" % ts, str(int(_level)), str(os.getpid()), str(lost)]
        for k, tv in tags.items():
            parts.append("%s=%s" % (k, _clean(tv)))
        if _send("\t".join(parts).encode("utf-8", "replace")):
            return True
        _lost += lost + 1
    except Exception:       # never fail the caller
        pass
    return False


def payload(obj):
    """Send a whole monitoring payload object (a dict or a JSON string):
    {"monitoring_event": ..., "ts": ..., "payload": [{...}, ...]}."""
    if _path is None or _dead:
        return False
    try:
        import json
        text = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
        return _send(b"P1\t" + text.encode("utf-8"))
    except Exception:
        return False


class Telemetry:
    """Dragon's Telemetry interface (dragon.telemetry.Telemetry)."""

    def __init__(self, *args, **kwargs):
        pass

    def add_data(self, ts_metric_name, ts_data, timestamp=None, telemetry_level=1,
                 tagk=None, tagv=None):
        tags = {}
        if tagk is not None:
            tags[str(tagk)] = "" if tagv is None else tagv
        return metric(ts_metric_name, ts_data, _level=telemetry_level, _ts=timestamp, **tags)

    def finalize(self):
        pass
