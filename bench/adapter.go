package bench

import (
	"context"
	"errors"
	"time"

	"github.com/minibus-go/minibus"
)

// ErrNotSupported is returned by a workload when the peer cannot do what the
// workload asks (scheduling on a buffered channel, say). The report shows n/a.
var ErrNotSupported = errors.New("bench: not supported by this peer")

// ErrNotBuilt is returned where minibus does not have the feature yet
// (topics, for W6). The report shows "not built yet".
var ErrNotBuilt = errors.New("bench: not built in minibus yet")

// errClosed is returned by the in-bench queues (channel, btree) after Close.
var errClosed = errors.New("bench: queue closed")

// Config describes the queue or topic a workload opens.
type Config struct {
	// Capacity is the most messages the workload can hold queued at once.
	// Adapters with a bounded buffer (the channel floor, watermill's output
	// channel) size it from this; the others ignore it. Zero means 1024.
	Capacity int
	// Scheduling says the workload will call Schedule. Peers that need a
	// different setup for it (NATS: a stream that allows schedules) use it.
	Scheduling bool
	// Dir is the directory in which a durable peer ([DurablePeers]) makes
	// the fresh directory of its files, removed again by Close. Empty means
	// os.TempDir(). The in-memory peers ignore it.
	Dir string
}

func (c Config) capacity() int {
	if c.Capacity <= 0 {
		return 1024
	}
	return c.Capacity
}

// Peer is one broker under test. OpenQueue starts a fresh, isolated instance
// of it for one run of one workload; closing the Queue stops everything
// OpenQueue started. A Peer is safe for concurrent use.
type Peer interface {
	// Name is the short name used in tables and in -peers filters.
	Name() string
	// OpenQueue starts a fresh broker holding one empty queue.
	OpenQueue(ctx context.Context, cfg Config) (Queue, error)
}

// Queue is one queue of a running broker. Send and NewReceiver are safe for
// concurrent use.
type Queue interface {
	// Send enqueues one message with the given body and returns only once the
	// broker has accepted it (a settled send, as Service Bus sends are). The
	// body is freshly allocated by the caller, who does not touch it again.
	Send(ctx context.Context, body []byte) error
	// NewReceiver returns a peek-lock receiver where the peer has locks (the
	// best the peer offers otherwise: see each adapter's doc comment).
	NewReceiver(ctx context.Context) (Receiver, error)
	// Close stops the broker instance and frees what OpenQueue made. It waits
	// for the goroutines the adapter started.
	Close() error
}

// Receiver receives from one queue or one subscription. One goroutine uses a
// receiver at a time; workloads with several consumers make one each.
type Receiver interface {
	// Receive waits until at least one message is available, then returns at
	// once up to max of them appended to buf[:0]. When ctx ends first it
	// returns ctx.Err(). Peers without batch receive return one message.
	Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error)
	// Complete settles one received message, removing it from the queue.
	Complete(ctx context.Context, d Delivery) error
	// Close releases the receiver.
	Close() error
}

// Delivery is one received message: its body and the adapter's handle for
// completing it.
type Delivery struct {
	Body []byte
	ref  any    // the peer's message: *minibus.ReceivedMessage, jetstream.Msg, ...
	id   uint64 // a lock token where the peer uses integers (btree)
}

// BatchSender is implemented by queues that can send several messages in
// one call (the durable workloads D4–D6). SendBatch returns once the broker
// has accepted every one of them, settled like Send; each adapter's doc
// comment says whether the batch is atomic and how it is acknowledged.
type BatchSender interface {
	SendBatch(ctx context.Context, bodies [][]byte) error
}

// Scheduler is implemented by queues that can schedule a message to become
// available at a later time (W5). Schedule is settled like Send.
type Scheduler interface {
	Schedule(ctx context.Context, body []byte, at time.Time) error
}

// Counter is implemented by queues that can say how many messages they hold
// (available, locked and scheduled). Workloads use it to check their counts.
type Counter interface {
	Count(ctx context.Context) (int64, error)
}

// OffHeap is implemented by queues that keep messages outside the Go heap
// (goqite: SQLite's pages in C memory). OffHeapBytes says how many bytes they
// hold there now.
type OffHeap interface {
	OffHeapBytes(ctx context.Context) (int64, error)
}

// Reducer is implemented by peers too slow to move the full counts of the
// throughput and memory workloads (those with [Workload.Reducible]) within
// the time budget of a full run, well under 30 minutes on 2 cores: those
// runs use 1/Reduction of the messages (never fewer than the workload's
// MinN), and the report gives the count beside the figures.
type Reducer interface {
	Reduction() int
}

// Needy is implemented by peers that need something this build or this
// machine may lack (goqite: cgo, for its SQLite driver). Missing says what
// is lacking, or "" when the peer can run. [RunWorkload] skips a peer that
// lacks something ([StatusSkipped]) and says why, rather than failing its
// runs.
type Needy interface {
	Missing() string
}

// missing is what p lacks to run here ("" for nothing).
func missing(p Peer) string {
	if n, ok := p.(Needy); ok {
		return n.Missing()
	}
	return ""
}

// TopicPeer is implemented by peers that can fan out one message to several
// subscriptions (W6).
type TopicPeer interface {
	Peer
	// OpenTopic starts a fresh broker holding one topic with subs
	// subscriptions, each of which receives every message sent.
	OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error)
}

// Topic is one topic with a fixed set of subscriptions, numbered from 0.
type Topic interface {
	// Send publishes one message to every subscription, settled like
	// Queue.Send.
	Send(ctx context.Context, body []byte) error
	// NewReceiver returns a receiver of subscription sub.
	NewReceiver(ctx context.Context, sub int) (Receiver, error)
	// Close stops the broker instance.
	Close() error
}

// Peers returns every peer in the order the tables list them: minibus first,
// then from the floor upwards.
func Peers() []Peer {
	return []Peer{
		MinibusPeer{},
		ChanPeer{},
		BtreePeer{},
		WatermillPeer{},
		NATSPeer{},
		GoqitePeer{},
	}
}

// DurablePeers returns the peers of the durable workloads (D1–D7) in the
// order the tables list them: minibus in each sync mode, then NATS
// JetStream's file store and goqite on a SQLite file, each in its most
// durable setting and in its default. Each keeps its files in a fresh
// directory under [Config.Dir].
func DurablePeers() []Peer {
	return []Peer{
		MinibusDurablePeer{Sync: minibus.SyncAlways},
		MinibusDurablePeer{Sync: minibus.SyncBatched},
		MinibusDurablePeer{Sync: minibus.SyncNone},
		NATSFilePeer{SyncAlways: true},
		NATSFilePeer{},
		GoqiteFilePeer{Full: true},
		GoqiteFilePeer{},
	}
}

// DurableBatchPeers are the peers of the durable batch workloads (D4–D6):
// [DurablePeers], then NATS again sending its batches with PublishAsync
// instead of as atomic batches (see [NATSFilePeer]).
func DurableBatchPeers() []Peer {
	return append(DurablePeers(), NATSFilePeer{SyncAlways: true, Async: true}, NATSFilePeer{Async: true})
}

// PeerByName returns the peer of [Peers] or [DurableBatchPeers] with that
// name, or nil.
func PeerByName(name string) Peer {
	for _, p := range append(Peers(), DurableBatchPeers()...) {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

// receiveFromChan is the Receive of adapters whose messages arrive on a Go
// channel: it waits for the first one, then takes what is already there, up
// to max.
func receiveFromChan[T any](ctx context.Context, ch <-chan T, max int, buf []Delivery, conv func(T) Delivery) ([]Delivery, error) {
	buf = buf[:0]
	select {
	case v, ok := <-ch:
		if !ok {
			return buf, errClosed
		}
		buf = append(buf, conv(v))
	case <-ctx.Done():
		return buf, ctx.Err()
	}
	for len(buf) < max {
		select {
		case v, ok := <-ch:
			if !ok {
				return buf, nil
			}
			buf = append(buf, conv(v))
		default:
			return buf, nil
		}
	}
	return buf, nil
}
