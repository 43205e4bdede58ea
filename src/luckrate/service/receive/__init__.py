"""Receive: the OTLP/gRPC and OTLP/HTTP listeners, HTTP framing and limits, and the status they answer with.

A receiver decodes a request and hands it to the intake (``assemble``); it answers with the protocol's
status and keeps serving whatever the request holds.
"""
