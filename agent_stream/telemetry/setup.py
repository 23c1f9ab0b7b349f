"""Making the OpenTelemetry SDK's providers from the standard environment (``[otel]`` extra).

Traces: ``OTEL_TRACES_EXPORTER`` (``otlp``, the default, and/or ``console``), exported in batches
over OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``..._TRACES_ENDPOINT``, ``..._HEADERS``: the
exporter reads them itself). Metrics are exported over OTLP too when ``OTEL_METRICS_EXPORTER``
says ``otlp``. The resource is the SDK's (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``)
with ``service.name`` set to the agent's name when neither names one.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

__all__ = ["make_providers"]

LOG = logging.getLogger("agent_stream.telemetry")


def _named_in_env() -> bool:
    if os.environ.get("OTEL_SERVICE_NAME", "").strip():
        return True
    attrs = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    return any(part.split("=", 1)[0].strip() == "service.name" for part in attrs.split(","))


def make_providers(service_name: str | None) -> tuple[Any, Any]:
    """Make the providers from the ``OTEL_*`` environment; the tracer provider becomes global.

    Args:
        service_name: the ``service.name`` resource attribute, unless the environment names
            one (None: none).

    Returns:
        (TracerProvider, MeterProvider or None).
    """
    attrs = {} if _named_in_env() or not service_name else {"service.name": service_name}
    resource = Resource.create(attrs)
    provider = TracerProvider(resource=resource)
    names = [n.strip().lower() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    )
    for name in names:
        if name == "otlp":
            if protocol.strip().lower() != "http/protobuf":
                LOG.warning(
                    "OTLP protocol %r is not available; exporting over http/protobuf", protocol
                )
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name and name != "none":
            LOG.warning("OTEL_TRACES_EXPORTER %r is not supported (otlp, console)", name)
    trace.set_tracer_provider(provider)
    meters = None
    metric_names = os.environ.get("OTEL_METRICS_EXPORTER", "").lower()
    if "otlp" in metric_names:
        from opentelemetry import metrics
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        meters = MeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
        )
        metrics.set_meter_provider(meters)
    return provider, meters
