package kafka

import (
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/clients"
)

// StartWorker starts an instance of a client library's loop (package
// clients) on the target's cluster, doing the session's job (cfg's
// group, transactional id, topics and timeouts, in the model's names).
// It reaches the cluster through cfg.Proxy, which records and faults it
// as process cfg.Proc; a worker restarted after a crash is let through
// again.
func (t *Target) StartWorker(loop clients.Loop, cfg SessionConfig) (clients.Worker, error) {
	if cfg.Proxy == nil {
		return nil, errors.New("kafka: a client library's worker runs through a proxy (SessionConfig.Proxy)")
	}
	cfg.Proxy.Process(cfg.Proc).Restart()
	job := clients.Job{
		Brokers:  []string{cfg.Proxy.Addr()},
		ClientID: cfg.Proc,
		Group:    t.names.group(cfg.Group), TransactionalID: t.names.txnID(cfg.TransactionalID),
		Input: t.names.topic(cfg.Input), Output: t.names.topic(cfg.Output),
		Prefix:             t.names.prefix,
		KafkaVersion:       t.cfg.KafkaVersion,
		SessionTimeout:     cfg.SessionTimeout,
		RebalanceTimeout:   cfg.RebalanceTimeout,
		TransactionTimeout: cfg.TransactionTimeout,
		Logf:               t.cfg.Logf,
	}
	if pipes.listening(cfg.Proxy.Addr()) {
		if loop.DialsItself {
			return nil, fmt.Errorf("kafka: %s's %s loop dials TCP itself: its proxy must listen on TCP (NewTCPProxy)", loop.Library, loop.Name)
		}
		job.Dial = pipes.dial
	}
	w, err := loop.Start(job)
	if err != nil {
		return nil, fmt.Errorf("kafka: starting %s's %s loop: %w", loop.Library, loop.Name, err)
	}
	return w, nil
}
