package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/fencecheck/fencecheck/internal/clients"
)

// StartWorker starts an instance of a client library's loop (package
// clients) on the target's cluster, doing the session's job (cfg's
// group, transactional id, topics and timeouts, in the model's names).
// It reaches the cluster through cfg.Proxy, which records and faults it
// as process cfg.Proc; a worker restarted after a crash is let through
// again. cfg.InstanceID makes it a static member (clients.Job.InstanceID).
func (t *Target) StartWorker(loop clients.Loop, cfg SessionConfig) (clients.Worker, error) {
	if cfg.Proxy == nil {
		return nil, errors.New("kafka: a client library's worker runs through a proxy (SessionConfig.Proxy)")
	}
	if cfg.ConsumerProtocol && !loop.ConsumerProtocol {
		return nil, fmt.Errorf("kafka: %s's %s loop does not speak KIP-848's consumer protocol (SessionConfig.ConsumerProtocol)", loop.Library, loop.Name)
	}
	cfg.Proxy.Process(cfg.Proc).Restart()
	job := clients.Job{
		Brokers:  []string{cfg.Proxy.Addr()},
		ClientID: cfg.Proc,
		Group:    t.names.group(cfg.Group), TransactionalID: t.names.txnID(cfg.TransactionalID),
		Input: t.names.topic(cfg.Input), Output: t.names.topic(cfg.Output),
		Prefix:             t.names.prefix,
		InstanceID:         cfg.InstanceID,
		KafkaVersion:       t.cfg.KafkaVersion,
		ConsumerProtocol:   cfg.ConsumerProtocol,
		SessionTimeout:     cfg.SessionTimeout,
		RebalanceTimeout:   cfg.RebalanceTimeout,
		TransactionTimeout: cfg.TransactionTimeout,
		Logf:               t.cfg.Logf,
	}
	inst := &instance{}
	if pipes.listening(cfg.Proxy.Addr()) {
		if loop.DialsItself {
			return nil, fmt.Errorf("kafka: %s's %s loop dials TCP itself: its proxy must listen on TCP (NewTCPProxy)", loop.Library, loop.Name)
		}
		job.Dial = inst.dial
	}
	w, err := loop.Start(job)
	if err != nil {
		return nil, fmt.Errorf("kafka: starting %s's %s loop: %w", loop.Library, loop.Name, err)
	}
	inst.Worker = w
	return inst, nil
}

// instance is a running worker whose dials, once it crashed, fail for
// ever. The proxy cuts a crashed process off only until its successor
// starts under the same client.id; a library still winding down (sarama
// retries a transaction's requests for seconds) would then be let
// through, and a killed process says nothing more.
type instance struct {
	clients.Worker
	crashed atomic.Bool
}

func (i *instance) dial(ctx context.Context, network, address string) (net.Conn, error) {
	if i.crashed.Load() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	return pipes.dial(ctx, network, address)
}

func (i *instance) Crash() {
	i.crashed.Store(true)
	i.Worker.Crash()
}
