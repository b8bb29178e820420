package model

import "errors"

// Options choose between the behaviours Kafka allows.
type Options struct {
	// TxnVersion is the transaction protocol: 1 (KIP-98) or 2 (KIP-890).
	TxnVersion int
}

// State is the whole broker's state, a value.
type State struct{ opts Options }

// Init is the state of a fresh cluster.
func Init(opts Options) State { return State{opts: opts} }

// Apply answers op the way the reference broker does.
func Apply(s State, op Op) (State, Result) { return s, NoAnswer() }

// Check says whether a broker may answer op with got in state s, and returns
// the state that follows; the error says which rule refuses it.
func Check(s State, op Op, got Result) (State, error) { return s, errors.New("not yet") }
