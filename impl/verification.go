package impl

import "github.com/fencecheck/fencecheck/model"

// The leader's verification state (model/verification.go): before the
// coordinator is asked about a transactional batch, the leader makes a
// VerificationStateEntry for its producer
// (UnifiedLog.maybeStartTransactionVerification), which keeps the lowest
// sequence seen and refuses a higher one (ProducerAppendInfo.checkSequence)
// until a transactional batch or a marker of the producer lands.

const (
	// verificationExpiryMs is producer.id.expiration.ms, and
	// verificationSweepMs producer.id.expiration.check.interval.ms: an
	// entry lasts until the sweep after its expiry, at the latest, which
	// is what the model answers.
	verificationExpiryMs = 86_400_000
	verificationSweepMs  = 600_000
)

// verifyEntry is one VerificationStateEntry.
type verifyEntry struct {
	lowest int32
	epoch  int16
	at     int64 // when it was made; an update keeps it
}

// verification is pid's entry at time now, dropped once expired.
func (p *partition) verification(pid, now int64) (verifyEntry, bool) {
	v, ok := p.verifying[pid]
	if ok && now-v.at >= verificationExpiryMs+verificationSweepMs {
		delete(p.verifying, pid)
		return verifyEntry{}, false
	}
	return v, ok
}

// startVerification makes or updates r's entry, unless its producer has a
// transaction open here at r's epoch (UnifiedLog.hasOngoingTransaction). A
// lower sequence of the entry's epoch is kept, and a higher epoch resets
// it (VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch).
func (p *partition) startVerification(r *model.Request, now int64) {
	if pe, known := p.producers[r.ProducerID]; known && pe.txnFirst != model.NoOffset && pe.epoch == r.Epoch {
		return
	}
	v, ok := p.verification(r.ProducerID, now)
	switch {
	case !ok:
		v = verifyEntry{lowest: r.Sequence, epoch: r.Epoch, at: now}
	case r.Epoch == v.epoch && r.Sequence < v.lowest:
		v.lowest = r.Sequence
	case r.Epoch > v.epoch:
		v.epoch, v.lowest = r.Epoch, r.Sequence
	default:
		return
	}
	if p.verifying == nil {
		p.verifying = map[int64]verifyEntry{}
	}
	p.verifying[r.ProducerID] = v
}

// verificationRefuses reports whether r's producer's entry refuses r's
// first sequence.
func (p *partition) verificationRefuses(r *model.Request, now int64) bool {
	v, ok := p.verification(r.ProducerID, now)
	return ok && r.Sequence > v.lowest
}
