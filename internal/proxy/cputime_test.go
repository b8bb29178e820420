//go:build unix

package proxy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used, in user and
// system mode: the client's, the cluster's and the proxy's together.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
