//go:build confluent

package kafka

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/clients/confluent"
)

// TestPropertyClientLoopsConfluent: each of confluent-kafka-go's loops
// (package internal/clients/confluent, librdkafka through cgo: go test -tags
// confluent) under the session's faults, through a proxy on TCP, under
// each transaction protocol, and the kip447 loop on KIP-848's consumer
// protocol too (group.protocol=consumer). See checkClientLoops.
func TestPropertyClientLoopsConfluent(t *testing.T) {
	checkClientLoops(t, confluent.Loops)
}

// TestConfluentStaticRestartFencesTheStalled: confluent-kafka-go's
// kip447 loop as a static member (group.instance.id). See
// requireStaticRestartFencesTheStalled.
func TestConfluentStaticRestartFencesTheStalled(t *testing.T) {
	requireStaticRestartFencesTheStalled(t, loopNamed(t, confluent.Loops, "kip447"))
}
