package kafka

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// TestWorkerThatDialsItself: a loop whose library opens its own
// connections is refused a proxy on the embedded cluster's in-memory
// network; NewTCPProxy's listens on TCP, is given to the loop as TCP
// addresses, and reaches the embedded cluster, its brokers' listeners
// included (a produce goes to a partition's leader).
func TestWorkerThatDialsItself(t *testing.T) {
	s := newSessionScenario(t, "")
	defer s.target.Close()
	var job clients.Job
	loop := clients.Loop{Library: "test", Name: "dials-itself", DialsItself: true, Start: func(j clients.Job) (clients.Worker, error) {
		job = j
		return nil, errors.New("not started")
	}}

	onPipes, err := s.target.NewProxy(s.rec)
	require.NoError(t, err)
	defer onPipes.Close()
	_, err = s.target.StartWorker(loop, SessionConfig{Proxy: onPipes, Proc: "W1"})
	require.ErrorContains(t, err, "NewTCPProxy")

	onTCP, err := s.target.NewTCPProxy(s.rec)
	require.NoError(t, err)
	defer onTCP.Close()
	_, err = s.target.StartWorker(loop, SessionConfig{Proxy: onTCP, Proc: "W1"})
	require.ErrorContains(t, err, "not started")
	require.Nil(t, job.Dial)
	require.Equal(t, []string{onTCP.Addr()}, job.Brokers)

	cl, err := kgo.NewClient(kgo.SeedBrokers(job.Brokers...), kgo.ClientID("W1")) // kgo dials TCP
	require.NoError(t, err)
	defer cl.Close()
	res := cl.ProduceSync(s.ctx, &kgo.Record{Topic: s.target.names.topic("trips"), Key: []byte("trip-tcp")})
	require.NoError(t, res.FirstErr())
}
