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

--fares-outside-transaction makes the workers write their fares with a
producer of their own, outside the transaction: the misconfiguration
exactly-once must catch (the zombie's aborted fares stay, and b writes them
again).

It exits 0 once every trip is in a committed transaction, and prints what
happened as JSON. `fencecheck check` judges the history the proxy wrote.

Usage: exactly_once.py --bootstrap HOST:PORT --control URL [--trips N]
                       [--scenario plain|zombie] [--fares-outside-transaction]
"""

import argparse
import json
import sys
import threading
import time
import urllib.request

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

TRIPS, FARES, GROUP = "trips", "fares", "fare-workers"


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

    def __init__(self, name, bootstrap, committed, lock, in_transaction=None, outside=False):
        self.name = name
        self.committed, self.lock = committed, lock  # trip keys committed, by any worker
        self.in_transaction = in_transaction  # called once, mid-transaction
        self.stop = threading.Event()
        self.events, self.error = [], None
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "client.id": name, "group.id": GROUP,
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500})
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "client.id": name, "transactional.id": name,
            "transaction.timeout.ms": 60000})
        self.fares = self.producer
        if outside:
            self.fares = Producer({"bootstrap.servers": bootstrap, "client.id": name + "-outside",
                                   "enable.idempotence": True})

    def run(self):
        try:
            self.loop()
        except Exception as e:  # the main thread reports it
            self.events.append(f"failed: {e}")
            self.error = e

    def loop(self):
        self.producer.init_transactions(30)
        self.consumer.subscribe([TRIPS])
        while not self.stop.is_set():
            records = [r for r in self.consumer.consume(num_messages=5, timeout=0.5) if r.error() is None]
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
    ap.add_argument("--scenario", choices=["plain", "zombie"], default="plain")
    ap.add_argument("--fares-outside-transaction", action="store_true")
    ap.add_argument("--deadline", type=float, default=120, help="seconds before giving up")
    args = ap.parse_args()

    produce_trips(args.bootstrap, args.trips)
    committed, lock = set(), threading.Lock()
    workers, threads = [], []

    def start(worker):
        workers.append(worker)
        t = threading.Thread(target=worker.run, name=worker.name)
        threads.append(t)
        t.start()

    def zombie(a):
        # Mid-transaction: stall a, let b take its trips over, then wake a.
        control(args.control, f"/processes/{a.name}/stall")
        a.events.append("stalled")
        b = Worker("fare-worker-b", args.bootstrap, committed, lock, outside=args.fares_outside_transaction)
        start(b)

        def wake_when_b_committed():
            while not any(e.startswith("committed") for e in b.events):
                time.sleep(0.1)
            control(args.control, f"/processes/{a.name}/wake")
            a.events.append("woken")
        threading.Thread(target=wake_when_b_committed, daemon=True).start()

    hook = zombie if args.scenario == "zombie" else None
    start(Worker("fare-worker-a", args.bootstrap, committed, lock, in_transaction=hook,
                 outside=args.fares_outside_transaction))
    deadline = time.monotonic() + args.deadline
    while len(committed) < args.trips:
        failed = [w for w in workers if w.error is not None]
        if failed:
            raise SystemExit(f"{failed[0].name} failed: {failed[0].error}")
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(committed)} of {args.trips} trips committed in {args.deadline} s")
        time.sleep(0.1)
    for w in workers:
        w.stop.set()
    for t in threads:
        t.join(30)
    print(json.dumps({"committed": len(committed), "workers": {w.name: w.events for w in workers}}))


if __name__ == "__main__":
    sys.exit(main())
