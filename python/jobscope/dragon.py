"""jobscope.dragon -- Dragon's telemetry interface on top of jobscope.

A program written for Dragon's telemetry service switches to jobscope by
changing one import:

    from dragon.telemetry import Telemetry      # before
    from jobscope.dragon import Telemetry       # after

    dt = Telemetry()
    if dt.level() >= 2:                         # or dt.level, as a number
        dt.add_data("predicted", 3.2, telemetry_level=2, tagk="gpu", tagv="0")
    dt.finalize()

`level()` is the run's telemetry level (`jobscope run --telemetry-level N`,
JOBSCOPE_TELEMETRY_LEVEL in the job's environment; 0 outside a monitored
job, as Dragon answers when telemetry is off).  `start()`, `shutdown()` and
`finalize()` exist as in Dragon; the monitor runs as long as the job, so
they only stop this object from sending.  Metrics go through
jobscope.metric(): never raising, never blocking (docs/metrics.md).
"""

import os

from . import metric as _metric

__all__ = ["Telemetry"]


class _Level(int):
    """An int that can also be called: dt.level and dt.level() both work."""

    def __call__(self):
        return int(self)


def _run_level():
    if not os.environ.get("JOBSCOPE_SOCKET"):
        return 0
    try:
        return max(0, int(os.environ.get("JOBSCOPE_TELEMETRY_LEVEL", "1")))
    except ValueError:
        return 1


class Telemetry:
    """dragon.telemetry.Telemetry, backed by the jobscope monitor of this job."""

    def __init__(self, *args, **kwargs):
        self._open = True

    @property
    def level(self):
        return _Level(_run_level())

    def start(self):
        self._open = True

    def add_data(self, ts_metric_name, ts_data, timestamp=None, telemetry_level=1,
                 tagk=None, tagv=None):
        if not self._open:
            return False
        tags = {}
        if tagk is not None:
            tags[str(tagk)] = "" if tagv is None else tagv
        return _metric(ts_metric_name, ts_data, _level=telemetry_level, _ts=timestamp, **tags)

    def shutdown(self):
        self._open = False

    def finalize(self):
        self._open = False
