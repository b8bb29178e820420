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

// KnownNamed reads a --known argument, the one reading 'fencecheck run'
// and 'fencecheck check' share: "kfake" is KnownFindings, "none" no
// finding, anything else a known-findings file (fencecheck/known/v1).
func KnownNamed(name string) (checker.Known, error) {
	switch name {
	case KfakeKnown:
		return KnownFindings(), nil
	case NoKnown:
		return checker.Known{}, nil
	}
	return checker.LoadKnownFile(name)
}

// The names KnownNamed reads as lists rather than files.
const (
	KfakeKnown = "kfake"
	NoKnown    = "none"
)
