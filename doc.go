// Package fencecheck is a property-based model checker for Kafka's fencing
// invariants. Its parts are packages of their own: model (the reference
// broker), checker (linearizability and the exactly-once invariants),
// histories (the history format) and cmd/fencecheck (the CLI).
//
// This package is the way into fencecheck from another module's go test:
// Test runs the exploration 'fencecheck run' runs against a broker of
// one's own (a model.Target constructor, or Brokers for a cluster by its
// addresses) and fails the test with the bug report. Its tests hold the
// properties, fuzz targets and golden replays that tie the parts together.
package fencecheck
