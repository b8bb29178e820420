// Package fencecheck is a property-based model checker for Kafka's fencing
// invariants. Its parts are packages of their own: model (the reference
// broker), checker (linearizability and the exactly-once invariants),
// histories (the history format) and cmd/fencecheck (the CLI). This
// package holds the properties, fuzz targets and golden replays that tie
// them together, in its tests.
package fencecheck
