"""Export: what the service emits. Every instrument (``instruments``), the recorder protocol and the OTel
SDK behind it (``telemetry``), Prometheus text, exemplars, verdict log events, and the run viewer.

Every stage records here; nothing here imports another stage.
"""
