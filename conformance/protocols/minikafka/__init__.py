"""The mini-Kafka binary protocol (mini-kafka-binary-protocol.txt): phase 2 of a Java broker."""
