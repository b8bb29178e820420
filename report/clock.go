package report

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/checker"
)

// unixMillisFrom is the smallest clock reading the page takes for Unix
// time in milliseconds, as fencecheck proxy records: 10^12 ms after the
// epoch is 2001-09-09. The logical clocks of simulated and hand-written
// histories count steps and never come near it.
const unixMillisFrom = 1_000_000_000_000

// clock is how the page writes a history's times. A clock in milliseconds
// (a "wall" history, or readings of Unix time) is written as seconds after
// the history's first call, "+1.234 s"; a logical clock as its plain
// numbers.
type clock struct {
	origin int64 // the history's first call
	millis bool  // the readings are milliseconds
	unix   bool  // and Unix time, so origin is a date
}

// clockOf is the clock of a history's rows, which come in call order.
func clockOf(rows []checker.TimelineRow, wallClock bool) clock {
	if len(rows) == 0 {
		return clock{}
	}
	origin := rows[0].Op.Call
	unix := origin >= unixMillisFrom
	return clock{origin: origin, millis: wallClock || unix, unix: unix}
}

// at writes the time t.
func (c clock) at(t int64) string {
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

// Legend says once how the page's times read: empty for a logical clock,
// whose numbers are the history's own.
func (c clock) Legend() string {
	switch {
	case c.unix:
		start := time.UnixMilli(c.origin).UTC().Format("2006-01-02T15:04:05.000Z07:00")
		return fmt.Sprintf("Times are seconds after the first call, made at %s (Unix time %d ms).", start, c.origin)
	case c.millis:
		return fmt.Sprintf("Times are seconds after the first call, made at %d ms on the history's clock.", c.origin)
	}
	return ""
}
