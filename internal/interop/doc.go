// Package interop holds tests of weir against librdkafka, the C client
// behind kcat and most non-JVM Kafka clients, through its Go binding
// (confluent-kafka-go, which carries a static librdkafka, so no system
// package is needed). It has no non-test code.
package interop
