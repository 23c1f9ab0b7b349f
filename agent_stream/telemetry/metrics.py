"""agent_stream's metrics, kept in process and rendered in the Prometheus text format.

No dependency: counters, a gauge and histograms with a few labels each, updated once per reply
(never per chunk), read by :func:`prometheus_text` (``GET /metrics`` on the gateway,
``serve --metrics-port``). When OpenTelemetry metrics are on (see :mod:`agent_stream.telemetry`),
every update also goes to the matching OpenTelemetry instrument (``mirror``).
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["METRICS", "Metrics", "prometheus_text"]

Labels = tuple[tuple[str, str], ...]

SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
BYTES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536)


class _Family:
    """One metric: its samples by label set."""

    def __init__(
        self, name: str, kind: str, help: str, buckets: Sequence[float] | None = None
    ) -> None:
        self.name = name
        self.kind = kind  # counter | gauge | histogram
        self.help = help
        self.buckets = tuple(buckets) if buckets is not None else None
        self.values: dict[Labels, float] = {}
        self.hist: dict[Labels, list[float]] = {}  # per bucket counts, then +Inf, sum, count

    def add(self, labels: Labels, value: float) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + value

    def observe(self, labels: Labels, value: float) -> None:
        assert self.buckets is not None
        h = self.hist.get(labels)
        if h is None:
            h = self.hist[labels] = [0.0] * (len(self.buckets) + 3)
        h[bisect_left(self.buckets, value)] += 1  # le is inclusive: bisect_left
        h[-2] += value
        h[-1] += 1


def _fmt(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: tuple[str, str] | None = None) -> str:
    items = [*labels, extra] if extra is not None else list(labels)
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in items) + "}"


class Metrics:
    """The metrics one process keeps (one instance: :data:`METRICS`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the /metrics server of ``serve`` reads from a thread
        self.mirror: Callable[[str, float, dict[str, str]], None] | None = None
        fams = [
            _Family(
                "agent_stream_time_to_first_text_seconds",
                "histogram",
                "Seconds from the question to the reply's first text (side: responder when "
                "produced, asker when received).",
                SECONDS,
            ),
            _Family(
                "agent_stream_reply_duration_seconds",
                "histogram",
                "Seconds a reply took, from the question to its end.",
                SECONDS,
            ),
            _Family(
                "agent_stream_reply_chat_messages",
                "histogram",
                "ChatMessages per reply (sent by the responder, received by the asker).",
                COUNTS,
            ),
            _Family(
                "agent_stream_reply_chunk_bytes",
                "histogram",
                "Mean size in UTF-8 bytes of a reply's text chunks.",
                BYTES,
            ),
            _Family("agent_stream_replies_total", "counter", "Replies ended, by side and status."),
            _Family(
                "agent_stream_resends_total",
                "counter",
                "ChatMessages sent again because they were not acknowledged (responder: "
                "reply ChatMessages; asker: the question).",
            ),
            _Family(
                "agent_stream_gaps_total",
                "counter",
                "Gaps in tagged replies: asked for again (event=requested) and filled "
                "(event=repaired).",
            ),
            _Family(
                "agent_stream_keepalives_total",
                "counter",
                "Keepalives sent (responder) or received (asker).",
            ),
            _Family(
                "agent_stream_refusals_total",
                "counter",
                "Questions answered with an error instead of a reply, by code.",
            ),
            _Family(
                "agent_stream_fleet_replies_lost_total",
                "counter",
                "Replies of dead fleet replicas this replica ended, for their askers, as lost.",
            ),
            _Family(
                "agent_stream_replies_in_flight",
                "gauge",
                "Replies being streamed by this process right now.",
            ),
        ]
        self.families: dict[str, _Family] = {f.name: f for f in fams}

    def add(self, name: str, value: float = 1.0, **labels: str) -> None:
        """Add to a counter or a gauge.

        Args:
            name: the counter's or gauge's name (one of ``families``).
            value: what to add (negative to lower a gauge).
            **labels: the series' labels.
        """
        key = tuple(sorted(labels.items()))
        with self._lock:
            self.families[name].add(key, value)
        if self.mirror is not None:
            self.mirror(name, value, labels)

    def observe(self, name: str, value: float, **labels: str) -> None:
        """One observation of a histogram.

        Args:
            name: the histogram's name (one of ``families``).
            value: the observed value, in the histogram's unit.
            **labels: the series' labels.
        """
        key = tuple(sorted(labels.items()))
        with self._lock:
            self.families[name].observe(key, value)
        if self.mirror is not None:
            self.mirror(name, value, labels)

    def value(self, name: str, **labels: str) -> float:
        """A counter's or gauge's value (a histogram's count) for these labels.

        Args:
            name: the counter's, gauge's or histogram's name.
            **labels: the series' labels.
        """
        key = tuple(sorted(labels.items()))
        fam = self.families[name]
        with self._lock:
            if fam.kind == "histogram":
                h = fam.hist.get(key)
                return h[-1] if h is not None else 0.0
            return fam.values.get(key, 0.0)

    def render(self) -> str:
        """The Prometheus text exposition format (version 0.0.4)."""
        out: list[str] = []
        with self._lock:
            for fam in self.families.values():
                out.append(f"# HELP {fam.name} {_esc(fam.help)}")
                out.append(f"# TYPE {fam.name} {fam.kind}")
                if fam.kind != "histogram":
                    for labels, v in sorted(fam.values.items()):
                        out.append(f"{fam.name}{_labels(labels)} {_fmt(v)}")
                    if not fam.values and fam.kind == "gauge":
                        out.append(f"{fam.name} 0")
                    continue
                assert fam.buckets is not None
                base = fam.name
                for labels, h in sorted(fam.hist.items()):
                    running = 0.0
                    for le, n in zip((*fam.buckets, math.inf), h, strict=False):
                        running += n
                        out.append(
                            f"{base}_bucket{_labels(labels, ('le', _fmt(le)))} {_fmt(running)}"
                        )
                    out.append(f"{base}_sum{_labels(labels)} {_fmt(h[-2])}")
                    out.append(f"{base}_count{_labels(labels)} {_fmt(h[-1])}")
        return "\n".join(out) + "\n"

    def reset(self) -> None:
        """Forget every sample (tests, benchmarks)."""
        with self._lock:
            for fam in self.families.values():
                fam.values.clear()
                fam.hist.clear()


METRICS = Metrics()


def prometheus_text() -> str:
    """This process's metrics in the Prometheus text format."""
    return METRICS.render()


def otel_mirror(meter: Any) -> Callable[[str, float, dict[str, str]], None]:
    """A ``Metrics.mirror`` recording into OpenTelemetry instruments.

    The instruments' names have dots (e.g. ``agent_stream.time_to_first_text``) and their
    unit in ``unit``.

    Args:
        meter: the OpenTelemetry Meter that makes the instruments.
    """
    instruments: dict[str, Any] = {}
    for fam in METRICS.families.values():
        name, unit = fam.name, "1"
        for suffix, u in (("_seconds", "s"), ("_bytes", "By"), ("_total", "1")):
            if name.endswith(suffix):
                name, unit = name[: -len(suffix)], u
        otel_name = name.replace("agent_stream_", "agent_stream.", 1)
        if fam.kind == "histogram":
            instruments[fam.name] = meter.create_histogram(
                otel_name, unit=unit, description=fam.help
            )
        elif fam.kind == "gauge":
            instruments[fam.name] = meter.create_up_down_counter(
                otel_name, unit=unit, description=fam.help
            )
        else:
            instruments[fam.name] = meter.create_counter(otel_name, unit=unit, description=fam.help)

    def mirror(name: str, value: float, labels: dict[str, str]) -> None:
        inst = instruments[name]
        if METRICS.families[name].kind == "histogram":
            inst.record(value, labels)
        else:
            inst.add(value, labels)

    return mirror
