package kafka

import (
	"bytes"
	_ "embed"

	"github.com/fencecheck/fencecheck/checker"
)

//go:embed known.json
var knownJSON []byte

// KnownFindings are kfake's known divergences from Apache Kafka, each
// decided from Kafka's source and written up in FINDINGS.md, with its
// saved histories under histories/kfake. Exploring kfake counts them and
// goes on looking for what is new (`fencecheck run --target kfake`'s
// default for --known).
func KnownFindings() checker.Known {
	known, err := checker.LoadKnown(bytes.NewReader(knownJSON))
	if err != nil {
		panic("kafka/known.json: " + err.Error()) // TestKnownFindingsLoad keeps it loadable
	}
	return known
}
