package checker_test

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/checker"
	"github.com/fencecheck/fencecheck/histories"
)

// Check judges a history with every check. Here a broker accepted a
// zombie's write after its transactional.id was given a newer epoch
// (seed 000).
func ExampleCheck() {
	h, err := histories.LoadFile("../histories/canonical/seed-000-zombie-accepted.json")
	if err != nil {
		panic(err)
	}
	report := checker.Check(h, checker.Options{})
	for _, v := range report.Verdicts {
		line, _, _ := strings.Cut(v.String(), " (") // the verdict, without its reason
		fmt.Println(line)
	}
	// Output:
	// linearizable: VIOLATED op 11
	// one-live-producer: VIOLATED op 11
	// exactly-once: ok
	// no-aborted-read: ok
	// offsets-monotonic: ok
	// progress: ok
	// one-owner: skipped
	// error-codes: ok
}
