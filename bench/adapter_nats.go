package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSPeer is NATS JetStream embedded in the process, as nats-server's docs
// show for embedding: server.NewServer with DontListen and JetStream on, a
// client connected through nats.InProcessServer (no socket), a stream with
// memory storage and work-queue retention, and one durable pull consumer
// with explicit acks.
//
// Send is jetstream.Publish, which waits for the stream's PubAck: the send is
// settled (the docs' faster PublishAsync returns before the ack, which a
// settled send may not). Each receiver keeps one Fetch of up to the batch
// size outstanding and streams its messages as they arrive (Fetch delivers
// them on a channel before the batch is full); Receive returns what has
// arrived, up to the maximum. Fetches carry a 5 s context deadline, so they
// run without idle heartbeats (jetstream enables them only for pulls of
// 10 s or more, and their missed-heartbeat check is what was seen to stall
// about 1 run in 10) and are renewed when they expire. The runner's stall
// watchdog and per-run timeout catch a stall all the same. Complete is Msg.Ack, the docs'
// fire-and-forget ack (DoubleAck would wait for the server).
//
// Schedule publishes to a subject of its own, sched.<n>, with the
// Nats-Schedule "@at <RFC 3339>" and Nats-Schedule-Target headers of
// JetStream message schedules (nats-server 2.12+), on a stream that allows
// them; the consumer then filters on the target subject.
//
// Its topic is a stream with limits retention and one durable pull consumer
// per subscription, each of which sees every message.
type NATSPeer struct{}

const (
	natsFetchWait = 5 * time.Second // the deadline of each Fetch
	natsSubject   = "q"
)

// Name implements [Peer].
func (NATSPeer) Name() string { return "nats" }

// OpenQueue implements [Peer].
func (NATSPeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	return openNATSQueue(ctx, cfg, natsOptions{})
}

// NATSFilePeer is NATSPeer with its stream in JetStream's file store, in a
// fresh directory under [Config.Dir] removed by Close. With SyncAlways the
// server is started with SyncAlways, the sync_interval: always of its
// configuration file: every write to the store is fsynced before the
// PubAck, so an acknowledged send survives a crash of the machine. Without
// it the server keeps its default, sync_interval 2 minutes: each message is
// written to its block file (flush in place) before the PubAck, so it
// survives a crash of the process, while a crash of the machine can lose up
// to the last two minutes.
//
// SendBatch is JetStream's atomic batch publish (see natsQueue.SendBatch),
// all or none like minibus's SendMessages; with Async it is instead a
// PublishAsync per message and a wait for every PubAck of the batch: not
// atomic, each message stored (and under SyncAlways fsynced) on its own.
type NATSFilePeer struct {
	SyncAlways bool
	Async      bool
}

// Name implements [Peer]: nats-file-always or nats-file, with -async for
// Async.
func (p NATSFilePeer) Name() string {
	name := "nats-file"
	if p.SyncAlways {
		name += "-always"
	}
	if p.Async {
		name += "-async"
	}
	return name
}

// OpenQueue implements [Peer].
func (p NATSFilePeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	return openNATSQueue(ctx, cfg, natsOptions{file: true, parent: cfg.Dir, syncAlways: p.SyncAlways, async: p.Async})
}

// natsOptions say how to start an embedded server and its queue's stream.
type natsOptions struct {
	// file keeps the stream in JetStream's file store, in a fresh directory
	// under this parent ("" for os.TempDir()), instead of in memory.
	file       bool
	parent     string
	syncAlways bool // with file: fsync every write (sync_interval: always)
	async      bool // SendBatch publishes asynchronously, not as an atomic batch
}

// openNATSQueue starts a server as o says with one work-queue stream and
// its durable pull consumer.
func openNATSQueue(ctx context.Context, cfg Config, o natsOptions) (Queue, error) {
	n, err := startNATS(o)
	if err != nil {
		return nil, err
	}
	sc := jetstream.StreamConfig{
		Name:      "BENCH",
		Subjects:  []string{natsSubject},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.MemoryStorage,
	}
	if o.file {
		sc.Storage = jetstream.FileStorage
		sc.AllowAtomicPublish = true
	}
	filter := ""
	if cfg.Scheduling {
		sc.Subjects = append(sc.Subjects, "sched.>")
		sc.AllowMsgSchedules = true
		filter = natsSubject
	}
	s, err := n.js.CreateStream(ctx, sc)
	if err != nil {
		n.Close()
		return nil, err
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "bench",
		AckPolicy:     jetstream.AckExplicitPolicy,
		FilterSubject: filter,
	})
	if err != nil {
		n.Close()
		return nil, err
	}
	return &natsQueue{natsInstance: n, stream: s, cons: c, atomic: sc.AllowAtomicPublish, async: o.async}, nil
}

// OpenTopic implements [TopicPeer].
func (NATSPeer) OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error) {
	n, err := startNATS(natsOptions{})
	if err != nil {
		return nil, err
	}
	s, err := n.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      "FANOUT",
		Subjects:  []string{natsSubject},
		Retention: jetstream.LimitsPolicy,
		Storage:   jetstream.MemoryStorage,
	})
	if err != nil {
		n.Close()
		return nil, err
	}
	t := &natsTopic{natsInstance: n, cons: make([]jetstream.Consumer, subs)}
	for i := range t.cons {
		t.cons[i], err = s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:   "s" + strconv.Itoa(i),
			AckPolicy: jetstream.AckExplicitPolicy,
		})
		if err != nil {
			n.Close()
			return nil, err
		}
	}
	return t, nil
}

// natsInstance is one embedded server and its in-process client connection.
type natsInstance struct {
	srv    *server.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	dir    string
	base   context.Context // ends at Close; every fetch runs under it
	cancel context.CancelFunc
	once   sync.Once
}

// natsMaxBatchInflight is the most atomic batches a file stream may have
// open at once: above the 64 producers of the durable workloads (the
// server's default is 50 per stream).
const natsMaxBatchInflight = 256

func startNATS(o natsOptions) (*natsInstance, error) {
	dir, err := os.MkdirTemp(o.parent, "minibus-bench-nats-")
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName:         "bench",
		DontListen:         true,
		JetStream:          true,
		JetStreamMaxMemory: 16 << 30,
		StoreDir:           dir,
		NoLog:              true,
		NoSigs:             true,
	}
	if o.file {
		opts.SyncAlways = o.syncAlways
		opts.JetStreamLimits.MaxBatchInflightPerStream = natsMaxBatchInflight
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
		return nil, errors.New("bench: nats: server not ready after 10 s")
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.InProcessServer(srv))
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	return &natsInstance{srv: srv, nc: nc, js: js, dir: dir, base: base, cancel: cancel}, nil
}

// Close ends every fetch, closes the connection, shuts the server down and
// waits for it.
func (n *natsInstance) Close() error {
	n.once.Do(func() {
		n.cancel()
		n.nc.Close()
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		os.RemoveAll(n.dir)
	})
	return nil
}

func (n *natsInstance) publish(ctx context.Context, subject string, body []byte) error {
	_, err := n.js.Publish(ctx, subject, body)
	return err
}

type natsQueue struct {
	*natsInstance
	stream  jetstream.Stream
	cons    jetstream.Consumer
	sched   atomic.Uint64 // numbers the schedule subjects
	atomic  bool          // the stream allows atomic batch publishes
	async   bool          // SendBatch uses PublishAsync
	batches atomic.Uint64 // numbers the batches
}

func (q *natsQueue) Send(ctx context.Context, body []byte) error {
	return q.publish(ctx, natsSubject, body)
}

// SendBatch implements [BatchSender] with JetStream's atomic batch publish
// (nats-server 2.12+, ADR-50), which nats.go has no helper for: every
// message carries the headers Nats-Batch-Id and Nats-Batch-Sequence, the
// last one also Nats-Batch-Commit: 1. As the reference client
// (orbit.go's jetstreamext) does by default, the first message is a
// request whose reply says the server took the batch, the middle ones are
// plain publishes and the last is a request whose reply is the batch's
// PubAck: the server stores the batch all or none, with one fsync for all
// of it under sync_interval: always. The server stages each batch in a
// store of its own (on disk for a file stream) until the commit. Only file
// streams allow it here (ErrNotSupported otherwise), leaving the matrix's
// stream as it was.
//
// With the peer's Async, SendBatch is a PublishAsync per message, then a
// wait for each PubAck: what nats.go offers for sending many messages
// fast, but not atomic.
func (q *natsQueue) SendBatch(ctx context.Context, bodies [][]byte) error {
	if q.async {
		return q.publishAsync(ctx, bodies)
	}
	if !q.atomic {
		return ErrNotSupported
	}
	id := "b" + strconv.FormatUint(q.batches.Add(1), 10)
	for i, b := range bodies {
		m := &nats.Msg{Subject: natsSubject, Data: b, Header: nats.Header{}}
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		last := i == len(bodies)-1
		if last {
			m.Header.Set("Nats-Batch-Commit", "1")
		}
		if !last && i > 0 {
			if err := q.nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		resp, err := q.nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			return err
		}
		if err := natsBatchReply(resp.Data, last, len(bodies)); err != nil {
			return fmt.Errorf("bench: nats: batch %s message %d: %w", id, i+1, err)
		}
	}
	return nil
}

// publishAsync publishes every body with PublishAsync, then waits for
// every PubAck.
func (q *natsQueue) publishAsync(ctx context.Context, bodies [][]byte) error {
	futures := make([]jetstream.PubAckFuture, len(bodies))
	for i, b := range bodies {
		f, err := q.js.PublishAsync(natsSubject, b)
		if err != nil {
			return err
		}
		futures[i] = f
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// natsBatchReply checks the server's reply to a request of an atomic
// batch: an API error, or for the commit (last) the batch's PubAck and
// its count.
func natsBatchReply(data []byte, last bool, n int) error {
	if len(data) == 0 && !last {
		return nil
	}
	var r struct {
		Error  *jetstream.APIError `json:"error"`
		Stream string              `json:"stream"`
		Count  int                 `json:"count"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	switch {
	case r.Error != nil:
		return r.Error
	case last && (r.Stream == "" || r.Count != n):
		return fmt.Errorf("commit acknowledged %d messages of stream %q, want %d", r.Count, r.Stream, n)
	}
	return nil
}

// Schedule implements [Scheduler]. The queue must be opened with
// Config.Scheduling.
func (q *natsQueue) Schedule(ctx context.Context, body []byte, at time.Time) error {
	m := &nats.Msg{
		Subject: "sched." + strconv.FormatUint(q.sched.Add(1), 10),
		Data:    body,
		Header: nats.Header{
			"Nats-Schedule":        []string{"@at " + at.UTC().Format(time.RFC3339)},
			"Nats-Schedule-Target": []string{natsSubject},
		},
	}
	_, err := q.js.PublishMsg(ctx, m)
	return err
}

// Count implements [Counter]: the messages stored in the stream, scheduled
// ones included.
func (q *natsQueue) Count(ctx context.Context) (int64, error) {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int64(info.State.Msgs), nil
}

func (q *natsQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	return newNATSReceiver(q.base, q.cons), nil
}

type natsTopic struct {
	*natsInstance
	cons []jetstream.Consumer
}

func (t *natsTopic) Send(ctx context.Context, body []byte) error {
	return t.publish(ctx, natsSubject, body)
}

func (t *natsTopic) NewReceiver(ctx context.Context, sub int) (Receiver, error) {
	if sub < 0 || sub >= len(t.cons) {
		return nil, fmt.Errorf("bench: nats: no subscription %d", sub)
	}
	return newNATSReceiver(t.base, t.cons[sub]), nil
}

// natsReceiver keeps at most one Fetch outstanding and hands out its
// messages as they arrive.
type natsReceiver struct {
	cons   jetstream.Consumer
	base   context.Context
	cancel context.CancelFunc // ends base, and so the outstanding fetch

	batch       jetstream.MessageBatch // nil when no fetch is outstanding
	cancelBatch context.CancelFunc
}

func newNATSReceiver(parent context.Context, cons jetstream.Consumer) *natsReceiver {
	base, cancel := context.WithCancel(parent)
	return &natsReceiver{cons: cons, base: base, cancel: cancel}
}

func natsDelivery(m jetstream.Msg) Delivery { return Delivery{Body: m.Data(), ref: m} }

func (r *natsReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	buf = buf[:0]
	for {
		if r.batch == nil {
			if err := r.base.Err(); err != nil {
				return buf, errClosed
			}
			fctx, cancel := context.WithTimeout(r.base, natsFetchWait)
			b, err := r.cons.Fetch(max, jetstream.FetchContext(fctx))
			if err != nil {
				cancel()
				return buf, err
			}
			r.batch, r.cancelBatch = b, cancel
		}
		ch := r.batch.Messages()
		select {
		case m, ok := <-ch:
			if !ok {
				if err := r.endBatch(); err != nil {
					return buf, err
				}
				continue // the fetch expired empty: pull again
			}
			buf = append(buf, natsDelivery(m))
		more:
			for len(buf) < max {
				select {
				case m, ok := <-ch:
					if !ok {
						r.endBatch() // an error shows again on the next fetch
						break more
					}
					buf = append(buf, natsDelivery(m))
				default:
					break more
				}
			}
			return buf, nil
		case <-ctx.Done():
			return buf, ctx.Err() // the fetch stays outstanding for the next call
		}
	}
}

// endBatch forgets the finished fetch and says why it ended if that was
// neither a full batch nor its expiry.
func (r *natsReceiver) endBatch() error {
	err := r.batch.Error()
	r.cancelBatch()
	r.batch, r.cancelBatch = nil, nil
	if r.base.Err() != nil {
		return errClosed
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func (r *natsReceiver) Complete(ctx context.Context, d Delivery) error {
	return d.ref.(jetstream.Msg).Ack()
}

// Close ends the outstanding fetch, whose goroutine then exits.
func (r *natsReceiver) Close() error {
	r.cancel()
	if r.cancelBatch != nil {
		r.cancelBatch()
	}
	return nil
}
