"""``luckrate serve``: OTLP receivers → trace assembly → streaming grader → OTel metrics."""
