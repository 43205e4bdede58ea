"""The hand-encoded google.rpc.Status / RetryInfo decode with the real generated classes."""

from __future__ import annotations

import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from luckrate.service.receive.status import encode_status, status_json

CASES = [(8, "span buffer full: retry later", 5), (3, "bad", None), (16, "", None), (8, "é" * 300, 30)]


@pytest.mark.parametrize("code, message, retry", CASES)
def test_status_round_trip(code, message, retry):
    st = status_pb2.Status.FromString(encode_status(code, message, retry))
    assert (st.code, st.message) == (code, message)
    if retry is None:
        assert not st.details
    else:
        info = error_details_pb2.RetryInfo()
        assert st.details[0].Unpack(info) and info.retry_delay.seconds == retry
        parsed = json_format.ParseDict(status_json(code, message, retry), status_pb2.Status())
        assert parsed == st
