"""An array's item is never null (Kafka's generated readers refuse a string item serialized
as null): a request carrying one is INVALID_REQUEST, decided by the codec, and the broker
answers it as such instead of failing on its own reply.  Found by ``conformance fuzz
--target-cmd`` against the reference broker as two PANICs (Python tracebacks): a
ConsumerGroupDescribe whose null group id reached the reply encoder, and a
ConsumerGroupHeartbeat whose null topic name reached ``sorted``."""

from __future__ import annotations

import pytest

from conformance.protocols.kafka import codec
from conformance.protocols.kafka.codec import KafkaError

# ConsumerGroupDescribe (69) v0, correlation 1: header v2 (client_id int16 length 0, no
# tags), then group_ids: compact count 1 (02), one compact string of length -1 (00: null),
# include_authorized_operations false (00), no tags (00)
DESCRIBE_NULL_GROUP = bytes.fromhex("0045 0000 00000001 0000 00" + "02 00 00 00")
# ConsumerGroupHeartbeat (68) v0, correlation 2, group_id "g" (02 67), member_id "" (01),
# member_epoch 0, instance_id null (00), rack_id null (00), rebalance_timeout_ms -1,
# subscribed_topic_names: 1 item (02), null (00); server_assignor null (00),
# topic_partitions null (00), no tags (00)
HEARTBEAT_NULL_TOPIC = bytes.fromhex(
    "0044 0000 00000002 0000 00" + "0267 01 00000000 00 00 ffffffff 02 00 00 00 00"
)


@pytest.mark.parametrize("payload", [DESCRIBE_NULL_GROUP, HEARTBEAT_NULL_TOPIC])
def test_a_null_array_item_is_an_invalid_request(payload: bytes) -> None:
    with pytest.raises(KafkaError) as caught:
        codec.decode_request(payload)
    assert caught.value.error == "INVALID_REQUEST"
    assert "is null, which an array's items never are" in str(caught.value)


def test_the_same_request_with_a_group_id_decodes() -> None:
    fine = bytes.fromhex("0045 0000 00000001 0000 00" + "02 0267 00 00")
    assert codec.decode_request(fine).body["group_ids"] == ["g"]
