package kafka

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// crashChildEnv, set, makes TestKfakeCrashesOnAnUnknownAPIKey the child
// that crashes.
const crashChildEnv = "FENCECHECK_KFAKE_CRASH_CHILD"

// Finding 26: one request of an API key kmsg does not know ends kfake's
// whole process. The test runs itself again as a child process, which
// starts kfake alone (no guard) and sends it that one request; the child
// must die of kfake's nil-pointer panic, and this process goes on.
func TestKfakeCrashesOnAnUnknownAPIKey(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		crashKfake(t)
		return
	}
	// The timeout only keeps a kfake that no longer crashes (the child
	// then waits for ever) from hanging the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKfakeCrashesOnAnUnknownAPIKey$")
	child.Env = append(os.Environ(), crashChildEnv+"=1")
	out, err := child.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the child did not exit with an error: %v\n%s", err, out)
	require.Equal(t, 2, exit.ExitCode(), "a Go panic exits 2\n%s", out)
	require.Contains(t, string(out), "panic: runtime error: invalid memory address or nil pointer dereference")
	require.Contains(t, string(out), "kfake.(*clientConn).read")
}

// crashKfake sends kfake a request of API key 200 and waits: kfake's
// panic ends the process.
func crashKfake(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	conn, err := net.Dial("tcp", cluster.ListenAddrs()[0])
	require.NoError(t, err)
	_, err = conn.Write(requestFrame(200, nil))
	require.NoError(t, err)
	select {} // until the panic
}
