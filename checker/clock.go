package checker

import (
	"fmt"
	"time"
)

// unixMillisFrom is the smallest clock reading taken for Unix
// time in milliseconds, as fencecheck proxy records: 10^12 ms after the
// epoch is 2001-09-09. The logical clocks of simulated and hand-written
// histories count steps and never come near it.
const unixMillisFrom = 1_000_000_000_000

// Clock is how the timeline and the counterexample page write a history's
// times. A clock in milliseconds
// (a "wall" history, or readings of Unix time) is written as seconds after
// the history's first call, "+1.234 s"; a logical clock as its plain
// numbers.
type Clock struct {
	origin int64 // the history's first call
	millis bool  // the readings are milliseconds
	unix   bool  // and Unix time, so origin is a date
}

// ClockOf is the clock of a history's rows, which come in call order.
func ClockOf(rows []TimelineRow, wallClock bool) Clock {
	if len(rows) == 0 {
		return Clock{}
	}
	origin := rows[0].Op.Call
	unix := origin >= unixMillisFrom
	return Clock{origin: origin, millis: wallClock || unix, unix: unix}
}

// At writes the time t.
func (c Clock) At(t int64) string {
	if !c.millis {
		return fmt.Sprint(t)
	}
	ms := t - c.origin
	sign := "+"
	if ms < 0 {
		sign, ms = "−", -ms
	}
	return fmt.Sprintf("%s%d.%03d s", sign, ms/1000, ms%1000)
}

// Legend says once how the times read: empty for a logical clock,
// whose numbers are the history's own.
func (c Clock) Legend() string {
	switch {
	case c.unix:
		start := time.UnixMilli(c.origin).UTC().Format("2006-01-02T15:04:05.000Z07:00")
		return fmt.Sprintf("Times are seconds after the first call, made at %s (Unix time %d ms).", start, c.origin)
	case c.millis:
		return fmt.Sprintf("Times are seconds after the first call, made at %d ms on the history's clock.", c.origin)
	}
	return ""
}
