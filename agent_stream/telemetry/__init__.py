"""Observability: OpenTelemetry traces that follow a reply across agents, and metrics.

Off by default and free when off. Tracing is decided once per process (:func:`configure`):

- on when the standard OpenTelemetry environment asks for it (``OTEL_EXPORTER_OTLP_ENDPOINT``,
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_TRACES_EXPORTER`` other than ``none``) and the
  ``agent-stream[otel]`` extra is installed: spans go over OTLP/HTTP (or to the console), the
  SDK's own variables configure the rest (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
  headers, batching); ``service.name`` is the agent's name when the variables name none;
- on when the application already set an OpenTelemetry tracer provider (e.g. ``logfire``), or
  passes one to :func:`configure`;
- off otherwise, and then nothing of OpenTelemetry is imported: every hook below is a no-op
  apart from the metrics (:mod:`.metrics`, a few dict updates per reply).

Message content (questions, answers, tool arguments) is recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``. Spans are flushed by :func:`shutdown`
(agents run by :func:`agent_stream.uagents.run_agent` and the gateway call it when they stop).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from agent_stream.telemetry.metrics import METRICS, prometheus_text
from agent_stream.telemetry.replies import ReplyObserver, fleet_ended_lost, refused

__all__ = [
    "CAPTURE_ENV",
    "METRICS",
    "ReplyObserver",
    "asking",
    "configure",
    "fleet_ended_lost",
    "prometheus_text",
    "refused",
    "reply_started",
    "shutdown",
    "tracer",
    "tracing",
]

LOG = logging.getLogger("agent_stream.telemetry")
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class _State:
    decided = False
    tracer: Any = None  # an OpenTelemetry Tracer while tracing is on
    provider: Any = None  # the SDK TracerProvider made here (flushed by shutdown)
    meter_provider: Any = None  # the SDK MeterProvider made here
    capture = False


_S = _State()


def _env_wants_traces() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = os.environ.get("OTEL_TRACES_EXPORTER")
    if exporter is not None and exporter.strip():
        return exporter.strip().lower() != "none"
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _app_provider() -> Any:
    """The tracer provider the application set itself, if it imported OpenTelemetry."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


def configure(
    service_name: str | None = None,
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    enabled: bool | None = None,
) -> bool:
    """Decide whether this process traces; returns whether tracing is on.

    Decided once: later calls change nothing unless they pass a provider or ``enabled``.

    Args:
        service_name: ``service.name`` when ``OTEL_SERVICE_NAME`` (and ``service.name`` in
            ``OTEL_RESOURCE_ATTRIBUTES``) is unset: the agent's name.
        tracer_provider: trace with this provider (e.g. one with an in-memory exporter).
        meter_provider: mirror the metrics into OpenTelemetry instruments of this provider.
        enabled: False turns tracing off (whatever the environment); True decides from the
            environment as the first call does.
    """
    if enabled is False:
        _S.decided, _S.tracer = True, None
        _mirror(None)
        return False
    if tracer_provider is not None or meter_provider is not None:
        _S.decided = True
        _S.capture = os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"
        if tracer_provider is not None:
            _S.tracer = tracer_provider.get_tracer("agent_stream")
        _mirror(meter_provider)
        return _S.tracer is not None
    if _S.decided and enabled is None:
        return _S.tracer is not None
    _S.decided = True
    _S.capture = os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"
    provider = _app_provider()
    if provider is None and _env_wants_traces():
        try:
            from agent_stream.telemetry.setup import make_providers
        except ImportError:
            LOG.warning(
                "OTEL_* variables ask for traces but OpenTelemetry is not installed: "
                "pip install 'agent-stream[otel]'"
            )
            return False
        provider, meters = make_providers(service_name)
        _S.provider, _S.meter_provider = provider, meters
        _mirror(meters)
    if provider is None:
        return False
    _S.tracer = provider.get_tracer("agent_stream")
    return True


def _mirror(meter_provider: Any) -> None:
    if meter_provider is None:
        METRICS.mirror = None
        return
    from agent_stream.telemetry.metrics import otel_mirror

    METRICS.mirror = otel_mirror(meter_provider.get_meter("agent_stream"))


def tracing() -> bool:
    """Whether this process traces (deciding now if nothing did yet)."""
    if not _S.decided:
        configure()
    return _S.tracer is not None


def tracer() -> Any:
    """The OpenTelemetry Tracer in use (None while tracing is off)."""
    return _S.tracer if tracing() else None


def reply_started(agent: str, *, peer: str, conversation: str, question: Any) -> ReplyObserver:
    """A responder starts a reply: the watch that records it.

    Its ``tap`` sees the reply's Messages, ``active()`` wraps the responder and ``end()``
    records it. With tracing on it carries the reply's span (continuing the question's
    ``traceparent``).

    Args:
        agent: the answering agent's name (the service name when telemetry is configured here).
        peer: the address of the agent that asked.
        conversation: the conversation (session) id of the question.
        question: the ChatMessage being answered (its tags may carry a ``traceparent``).

    Returns:
        The reply's observer: a :class:`ReplyObserver`, traced when tracing is on.
    """
    if not _S.decided:
        configure(agent)
    if _S.tracer is None:
        return ReplyObserver(agent)
    from agent_stream.telemetry.spans import TracedReply

    try:
        return TracedReply(
            _S.tracer,
            agent,
            peer=peer,
            conversation=conversation,
            question=question,
            capture=_S.capture,
        )
    except Exception as exc:  # tracing must never stop an answer
        LOG.warning("reply not traced: %s", exc)
        return ReplyObserver(agent)


def asking(reply: Any, agent: str | None = None) -> None:
    """A question is about to go: its figures are recorded when its reply ends.

    With tracing on, a CLIENT span follows it and its ``traceparent`` goes in the question's
    tags.

    Args:
        reply: the :class:`agent_stream.uagents.Reply` of the question, not yet sent.
        agent: the asking agent's name (None: unnamed; used if telemetry is configured here).
    """
    if not _S.decided:
        configure(agent)
    if _S.tracer is None:
        from agent_stream.telemetry.replies import ask_ended

        reply.on_end(ask_ended)
        return
    from agent_stream.telemetry.spans import asking as traced

    try:
        traced(_S.tracer, reply, agent)
    except Exception as exc:  # tracing must never stop a question
        LOG.warning("question not traced: %s", exc)


def shutdown(timeout_millis: int = 5000) -> None:
    """Flush the providers made here, so that the spans of a short run are not lost.

    Args:
        timeout_millis: how long each provider may take to flush, in milliseconds.
    """
    for p in (_S.provider, _S.meter_provider):
        if p is None:
            continue
        try:
            p.force_flush(timeout_millis)
        except Exception as exc:  # an exporter that cannot reach its collector
            LOG.warning("could not flush telemetry: %s", exc)


def _reset_for_tests() -> None:
    """Forget the decision (tests)."""
    _S.decided, _S.tracer, _S.provider, _S.meter_provider = False, None, None, None
    METRICS.mirror = None
