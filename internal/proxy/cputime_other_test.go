//go:build !unix

package proxy

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
