package checker

// Phases of a check that Options.Progress names besides the checks. The
// linearizability search, which error-codes shares, is Linearizable.
const (
	// PhaseInvariants is the invariants' one pass over the operations in
	// call order, which feeds every check's fold.
	PhaseInvariants = "invariants"
)

// passProgress tells Options.Progress how far one pass of a phase over
// the history's operations has got, every progressEvery operations, so
// that the cost is one call per block and not one per operation. A nil
// passProgress reports nothing.
type passProgress struct {
	report func(phase string, done int)
	phase  string
}

func newPassProgress(report func(phase string, done int)) *passProgress {
	if report == nil {
		return nil
	}
	return &passProgress{report: report}
}

// begin names the phase the passes that follow belong to.
func (p *passProgress) begin(phase string) {
	if p != nil {
		p.phase = phase
	}
}

// start reports that a pass begins: its count is 0.
func (p *passProgress) start() {
	if p != nil {
		p.report(p.phase, 0)
	}
}

// passed reports done operations of the pass gone through when done ends a
// block.
func (p *passProgress) passed(done int) {
	if p != nil && done%progressEvery == 0 {
		p.report(p.phase, done)
	}
}

// phaseReport is report for the one phase named, as the linearizability
// search reports (nil when report is).
func phaseReport(report func(phase string, done int), phase string) func(int) {
	if report == nil {
		return nil
	}
	return func(done int) { report(phase, done) }
}
