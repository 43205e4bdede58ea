"""Assemble: a decoded request's spans and log records, counted, logged (``--wal``) and buffered per trace
until the trace (or the run of several traces) is complete.

The intake judges each request once, routes its traces to their owner (``routing``) and takes room in
the span budget; the assembler completes traces in time buckets; run assembly groups traces into runs.
"""
