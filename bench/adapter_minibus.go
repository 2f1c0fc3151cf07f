package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/minibus-go/minibus"
)

// MinibusPeer is minibus as a user would drive it: a Namespace on the real
// clock with one queue whose MaxSizeInMegabytes is raised to 80 GiB (the
// 1 GiB default would refuse W3's and W5's million messages);
// Queue.SendMessage per message (settled: it returns once the message is
// stored); a peek-lock Receiver per consumer, ReceiveMessages for up to the
// batch size and CompleteMessage per message; Queue.ScheduleMessages with one
// message per call for scheduling; for W6 a topic with one subscription per
// consumer, each with the default rule. For the scaling set it opens a topic
// whose subscriptions filter (OpenFilteredTopic) and a namespace of many
// queues (OpenQueues).
type MinibusPeer struct{}

// minibusMaxSizeMB lifts the queue quota well above a million 1 KiB messages.
const minibusMaxSizeMB = 81920

// Name implements [Peer].
func (MinibusPeer) Name() string { return "minibus" }

// OpenQueue implements [Peer].
func (MinibusPeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	ns := minibus.NewNamespace()
	q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		ns.Close()
		return nil, err
	}
	return &minibusQueue{ns: ns, q: q}, nil
}

// OpenTopic implements [TopicPeer]: a topic with MaxSizeInMegabytes raised
// like the queue's, and subs subscriptions with the default rule (a
// TrueFilter), so that each receives every message.
func (MinibusPeer) OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error) {
	ns := minibus.NewNamespace()
	t, err := ns.CreateTopic("bench", &minibus.TopicProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		ns.Close()
		return nil, err
	}
	mt := &minibusTopic{ns: ns, t: t, subs: make([]*minibus.Subscription, subs)}
	for i := range mt.subs {
		if mt.subs[i], err = t.CreateSubscription(fmt.Sprintf("s%d", i), nil); err != nil {
			ns.Close()
			return nil, err
		}
	}
	return mt, nil
}

type minibusTopic struct {
	ns   *minibus.Namespace
	t    *minibus.Topic
	subs []*minibus.Subscription
}

func (m *minibusTopic) Send(ctx context.Context, body []byte) error {
	return m.t.SendMessage(ctx, &minibus.Message{Body: body}, nil)
}

func (m *minibusTopic) NewReceiver(ctx context.Context, sub int) (Receiver, error) {
	r, err := m.subs[sub].NewReceiver(nil)
	if err != nil {
		return nil, err
	}
	return &minibusReceiver{r: r}, nil
}

func (m *minibusTopic) Close() error { return m.ns.Close() }

type minibusQueue struct {
	ns *minibus.Namespace
	q  *minibus.Queue
}

func (m *minibusQueue) Send(ctx context.Context, body []byte) error {
	return m.q.SendMessage(ctx, &minibus.Message{Body: body}, nil)
}

// SendBatch implements [BatchSender] with one Queue.SendMessages: all or
// none, acknowledged once for the batch.
func (m *minibusQueue) SendBatch(ctx context.Context, bodies [][]byte) error {
	msgs := make([]*minibus.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = &minibus.Message{Body: b}
	}
	return m.q.SendMessages(ctx, msgs, nil)
}

// Schedule implements [Scheduler].
func (m *minibusQueue) Schedule(ctx context.Context, body []byte, at time.Time) error {
	_, err := m.q.ScheduleMessages(ctx, []*minibus.Message{{Body: body}}, at, nil)
	return err
}

// Count implements [Counter].
func (m *minibusQueue) Count(ctx context.Context) (int64, error) {
	rp := m.q.RuntimeProperties()
	return rp.ActiveMessageCount + rp.ScheduledMessageCount, nil
}

func (m *minibusQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	r, err := m.q.NewReceiver(nil)
	if err != nil {
		return nil, err
	}
	return &minibusReceiver{r: r}, nil
}

func (m *minibusQueue) Close() error { return m.ns.Close() }

// MinibusDurablePeer is minibus on disk: minibus.Open on a fresh directory
// under [Config.Dir] with WithSync(Sync) and the default sync interval
// (10 ms, for SyncBatched), holding one queue set up and driven as
// MinibusPeer's. SendBatch is one Queue.SendMessages. Close closes the
// namespace, which first takes a snapshot if the log has grown since the
// last one, and removes the directory.
//
// What an acknowledged send survives: with SyncAlways a crash of the
// machine (it is fsynced, and concurrent calls share one fsync); with
// SyncBatched a crash of the process, and of the machine but for about the
// last 10 ms; with SyncNone a crash of the process (it is written to the
// log file; the log is fsynced when a 64 MiB segment fills and at
// snapshots).
type MinibusDurablePeer struct {
	Sync minibus.SyncMode
}

// Name implements [Peer]: minibus-always, minibus-batched or minibus-none.
func (p MinibusDurablePeer) Name() string {
	switch p.Sync {
	case minibus.SyncAlways:
		return "minibus-always"
	case minibus.SyncBatched:
		return "minibus-batched"
	case minibus.SyncNone:
		return "minibus-none"
	}
	return fmt.Sprintf("minibus-%v", p.Sync)
}

// OpenQueue implements [Peer].
func (p MinibusDurablePeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "minibus-bench-")
	if err != nil {
		return nil, err
	}
	ns, err := minibus.Open(dir, minibus.WithSync(p.Sync))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		ns.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return &minibusDurableQueue{minibusQueue{ns: ns, q: q}, dir}, nil
}

type minibusDurableQueue struct {
	minibusQueue
	dir string
}

// Close closes the namespace and removes its directory.
func (m *minibusDurableQueue) Close() error {
	err := m.ns.Close()
	return errors.Join(err, os.RemoveAll(m.dir))
}

type minibusReceiver struct{ r *minibus.Receiver }

func (r *minibusReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	buf = buf[:0]
	msgs, err := r.r.ReceiveMessages(ctx, max, nil)
	if err != nil {
		return buf, err
	}
	for _, m := range msgs {
		buf = append(buf, Delivery{Body: m.Body, ref: m})
	}
	return buf, nil
}

func (r *minibusReceiver) Complete(ctx context.Context, d Delivery) error {
	return r.r.CompleteMessage(ctx, d.ref.(*minibus.ReceivedMessage), nil)
}

func (r *minibusReceiver) Close() error { return r.r.Close(context.Background()) }

// OpenFilteredTopic implements [FilteredTopicPeer]: a topic with
// MaxSizeInMegabytes raised like the queue's, and subs subscriptions whose
// default rule is the filter m asks for: CorrelationFilter{Subject:
// "bench"}, CorrelationFilter{ApplicationProperties: {"k": i}} or
// SQLFilter{"k = i"}. Every message is sent with Subject "bench" and the
// application property k.
func (MinibusPeer) OpenFilteredTopic(ctx context.Context, subs int, m Match) (FilteredTopic, error) {
	ns := minibus.NewNamespace()
	t, err := ns.CreateTopic("bench", &minibus.TopicProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		ns.Close()
		return nil, err
	}
	mt := &minibusFilteredTopic{minibusTopic{ns: ns, t: t, subs: make([]*minibus.Subscription, subs)}}
	for i := range mt.subs {
		var f minibus.RuleFilter
		switch m {
		case MatchAll:
			f = minibus.CorrelationFilter{Subject: "bench"}
		case MatchOneCorrelation:
			f = minibus.CorrelationFilter{ApplicationProperties: map[string]any{"k": i}}
		default:
			f = minibus.SQLFilter{Expression: fmt.Sprintf("k = %d", i)}
		}
		props := &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Filter: f}}
		if mt.subs[i], err = t.CreateSubscription(fmt.Sprintf("s%d", i), props); err != nil {
			ns.Close()
			return nil, err
		}
	}
	return mt, nil
}

type minibusFilteredTopic struct{ minibusTopic }

func (m *minibusFilteredTopic) Send(ctx context.Context, body []byte, k int) error {
	msg := &minibus.Message{Body: body, Subject: "bench", ApplicationProperties: map[string]any{"k": k}}
	return m.t.SendMessage(ctx, msg, nil)
}

// OpenQueues implements [QueueSetPeer]: one namespace holding n queues, each
// with MaxSizeInMegabytes raised like OpenQueue's.
func (MinibusPeer) OpenQueues(ctx context.Context, n int) (QueueSet, error) {
	ns := minibus.NewNamespace()
	qs := &minibusQueueSet{ns: ns, qs: make([]*minibus.Queue, n)}
	for i := range qs.qs {
		q, err := ns.CreateQueue(fmt.Sprintf("q%d", i), &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
		if err != nil {
			ns.Close()
			return nil, err
		}
		qs.qs[i] = q
	}
	return qs, nil
}

type minibusQueueSet struct {
	ns *minibus.Namespace
	qs []*minibus.Queue
}

func (s *minibusQueueSet) Queue(i int) Queue { return &minibusQueue{ns: s.ns, q: s.qs[i]} }
func (s *minibusQueueSet) Close() error      { return s.ns.Close() }
