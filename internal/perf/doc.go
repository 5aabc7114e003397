// Package perf holds the measuring logic behind `weir perf`: a fixed-size
// latency histogram with percentiles, producer and consumer statistics
// windows, a throughput throttler, output formatting that matches Apache
// Kafka's kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh, the
// mapping from Kafka producer properties to franz-go options, and a raw
// fetch reader that counts records from RecordBatch headers.
//
// Nothing here allocates per record on the hot paths: the histogram is a fixed
// array, statistics are plain counters, and the raw reader walks batch headers
// in place.
package perf
