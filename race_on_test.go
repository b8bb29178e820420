//go:build race

package fencecheck_test

// raceDetector is set when the tests run under the race detector, which
// slows every goroutine several times over.
const raceDetector = true
