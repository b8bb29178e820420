#!/usr/bin/env python3
"""A consume-transform-produce pipeline on librdkafka (confluent-kafka), run
through `fencecheck proxy`, and a zombie scripted through its control API.

Each worker reads trips (read_committed, consumer group fare-workers) and
writes a fare per trip to fares in a transaction that also commits its
input offsets with the group's metadata (KIP-447), the loop librdkafka's
documentation teaches. A worker is one process of the recorded history: its
consumer and its producer share a client.id.

  --scenario plain    one worker processes every trip.
  --scenario zombie   worker a stalls in the middle of a transaction (the
                      control API holds its traffic, heartbeats too); its
                      group drops it and worker b takes its trips over; when
                      b has committed, a wakes, a zombie: its offset commit
                      is refused, it aborts and goes on from what b
                      committed.
  --scenario restart  static members (--static is implied): worker a stalls
                      in the middle of a transaction, and a supervisor
                      starts a process of the same worker (client.id
                      fare-worker-a-restarted, with a's group.instance.id
                      and transactional.id) before the group drops a. It
                      takes a's instance over, fences a's producer, and
                      commits a's trips. When it has, a wakes:
                      the coordinator fences it with FENCED_INSTANCE_ID (or
                      its producer is fenced first), a fatal error, and a
                      stops.

--static gives each worker's consumer a group.instance.id, its name
(KIP-345): a static member, which a restart takes over.

--fares-outside-transaction makes the workers write their fares with a
producer of their own, outside the transaction: the misconfiguration
exactly-once must catch (the zombie's aborted fares stay, and b writes them
again).

It exits 0 once every trip is in a committed transaction, and prints what
happened as JSON. `fencecheck check` judges the history the proxy wrote.

Usage: exactly_once.py --bootstrap HOST:PORT --control URL [--trips N]
                       [--scenario plain|zombie|restart] [--static]
                       [--fares-outside-transaction]
"""

import argparse
import json
import sys
import threading
import time
import urllib.request

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

TRIPS, FARES, GROUP = "trips", "fares", "fare-workers"

# The errors that mean a newer process of the same worker replaced this
# one: its consumer's group.instance.id (KIP-345), which librdkafka makes
# a fatal consumer error (_FATAL), or its producer's transactional.id
# (KIP-98, librdkafka's _FENCED).
FENCED = {KafkaError._FATAL, KafkaError._FENCED, KafkaError.FENCED_INSTANCE_ID,
          KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def control(url, path):
    """POST a fault to the proxy's control API; raise on anything but 200."""
    req = urllib.request.Request(url + path, method="POST", data=b"")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def produce_trips(bootstrap, n):
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "trip-source",
                         "enable.idempotence": True})
    for i in range(n):
        producer.produce(TRIPS, key=f"trip-{i}", value="a trip")
    if producer.flush(30) != 0:
        raise SystemExit("trips not delivered within 30 s")


class Worker:
    """One pipeline worker: a consumer and a transactional producer."""

    def __init__(self, name, bootstrap, committed, lock, in_transaction=None, outside=False,
                 instance=None, of=None):
        """A worker whose client.id is name. instance, when set, is its
        consumer's group.instance.id. of names the worker it is a new
        process of: its transactional.id is that worker's (default name)."""
        self.name = name
        self.committed, self.lock = committed, lock  # trip keys committed, by any worker
        self.in_transaction = in_transaction  # called once, mid-transaction
        self.stop = threading.Event()
        self.events, self.error = [], None
        self.fenced = False  # a newer process of the same worker fenced it
        self.fatal = None  # the first fatal error of either client
        consumer = {
            "bootstrap.servers": bootstrap, "client.id": name, "group.id": GROUP, "error_cb": self.on_error,
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500}
        if instance is not None:
            consumer["group.instance.id"] = instance
        self.consumer = Consumer(consumer)
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "client.id": name, "transactional.id": of or name,
            "transaction.timeout.ms": 60000, "error_cb": self.on_error})
        self.fares = self.producer
        if outside:
            self.fares = Producer({"bootstrap.servers": bootstrap, "client.id": name + "-outside",
                                   "enable.idempotence": True})

    def consume(self):
        """The next records or errors. librdkafka 2.0 hands a fatal consumer
        error (a fenced static member's, for example) to consume() as
        _FATAL: it is kept in self.fatal."""
        polled = self.consumer.consume(num_messages=5, timeout=0.5)
        for r in polled:
            if r.error() is not None and r.error().code() == KafkaError._FATAL and self.fatal is None:
                self.fatal = r.error()
        return polled

    def run(self):
        try:
            self.loop()
        except Exception as e:
            if self.fatal is None:
                try:  # a fatal error may have caused e (a seek in a fenced consumer is _STATE)
                    self.consume()
                except KafkaException:
                    pass
            if self.fatal is not None and self.fatal.code() in FENCED:
                # A newer process of this worker took its instance or its
                # transactional id over: this one must stop, as
                # librdkafka's fatal errors say.
                self.events.append(f"fenced: {self.fatal.str()}")
                self.fenced = True
            else:  # the main thread reports it
                self.events.append(f"failed: {e}")
                self.error = e
            try:
                self.consumer.close()
            except KafkaException:
                pass

    def on_error(self, err):
        """error_cb of both clients: keeps the first fatal error, so that
        an error it causes later (a seek in a fenced consumer is _STATE)
        is known for what it is."""
        if err.fatal() and self.fatal is None:
            self.fatal = err

    def loop(self):
        self.producer.init_transactions(30)
        self.consumer.subscribe([TRIPS])
        while not self.stop.is_set():
            polled = self.consume()
            if self.fatal is not None:
                raise KafkaException(self.fatal)
            records = [r for r in polled if r.error() is None]
            if records:
                self.transact(records)
        self.consumer.close()  # leaves the group
        self.producer.flush(10)
        self.fares.flush(10)

    def transact(self, records):
        self.producer.begin_transaction()
        for r in records:
            self.fares.produce(FARES, key=r.key(), value=b"a fare")
        if self.fares is not self.producer:
            self.fares.flush(30)
        if self.in_transaction is not None:
            hook, self.in_transaction = self.in_transaction, None
            hook(self)
        try:
            positions = self.consumer.position(self.consumer.assignment())
            self.producer.send_offsets_to_transaction(positions, self.consumer.consumer_group_metadata(), 30)
            self.producer.commit_transaction(30)
        except KafkaException as e:
            err = e.args[0]
            if not err.txn_requires_abort():
                raise
            self.events.append(f"{err.name()}: aborted")
            self.producer.abort_transaction(30)
            self.rewind()
            return
        with self.lock:
            self.committed.update(r.key().decode() for r in records)
        self.events.append(f"committed {len(records)}")

    def rewind(self):
        """Go on from the group's committed offsets, as after any abort."""
        assigned = self.consumer.assignment()
        if not assigned:
            return
        for tp in self.consumer.committed(assigned, timeout=30):
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--control", required=True, help="the proxy's control API, http://HOST:PORT")
    ap.add_argument("--trips", type=int, default=20)
    ap.add_argument("--scenario", choices=["plain", "zombie", "restart"], default="plain")
    ap.add_argument("--static", action="store_true", help="give each consumer a group.instance.id")
    ap.add_argument("--fares-outside-transaction", action="store_true")
    ap.add_argument("--deadline", type=float, default=120, help="seconds before giving up")
    args = ap.parse_args()

    static = args.static or args.scenario == "restart"
    produce_trips(args.bootstrap, args.trips)
    committed, lock = set(), threading.Lock()
    workers, threads = [], []
    replaced = set()  # the workers a newer process of theirs may fence

    def worker(name, hook=None, of=None):
        return Worker(name, args.bootstrap, committed, lock, in_transaction=hook,
                      outside=args.fares_outside_transaction,
                      instance=(of or name) if static else None, of=of)

    def start(w):
        workers.append(w)
        # A daemon, so that a failure exits without waiting for the rest.
        t = threading.Thread(target=w.run, name=w.name, daemon=True)
        threads.append(t)
        t.start()
        return w

    def zombie(a):
        # Mid-transaction: stall a, let b take its trips over, then wake a.
        control(args.control, f"/processes/{a.name}/stall")
        a.events.append("stalled")
        wake_when_committed(a, start(worker("fare-worker-b")))

    def restart(a):
        # Mid-transaction: stall a, start a new process of it, which takes
        # its instance and transactional id over, then wake a.
        control(args.control, f"/processes/{a.name}/stall")
        a.events.append("stalled")
        replaced.add(a.name)
        wake_when_committed(a, start(worker(a.name + "-restarted", of=a.name)))

    def wake_when_committed(a, b):
        def wake():
            while not any(e.startswith("committed") for e in b.events):
                time.sleep(0.1)
            control(args.control, f"/processes/{a.name}/wake")
            a.events.append("woken")
        threading.Thread(target=wake, daemon=True).start()

    hook = {"zombie": zombie, "restart": restart}.get(args.scenario)
    a = start(worker("fare-worker-a", hook))
    deadline = time.monotonic() + args.deadline
    # In a restart, a must also have met its fence, so that the history
    # shows it: its group fences it once it heartbeats again.
    while len(committed) < args.trips or (args.scenario == "restart" and not a.fenced):
        failed = [w for w in workers if w.error is not None or (w.fenced and w.name not in replaced)]
        if failed:
            raise SystemExit(f"{failed[0].name} failed: {failed[0].error or failed[0].events[-1]}")
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(committed)} of {args.trips} trips committed in {args.deadline} s"
                             f" ({a.name}: {a.events})")
        time.sleep(0.1)
    for w in workers:
        w.stop.set()
    for t in threads:
        t.join(30)
    print(json.dumps({"committed": len(committed), "workers": {w.name: w.events for w in workers}}))


if __name__ == "__main__":
    sys.exit(main())
