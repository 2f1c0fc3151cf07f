package bench

import (
	"context"
	"sync"
)

// ChanPeer is the floor: a buffered Go channel of bodies, sized to the
// workload's capacity. Send is a channel send (the message is "accepted" once
// it is in the buffer); Receive waits for one body and takes what else is
// buffered, up to the maximum; Complete does nothing, as there is no lock and
// no acknowledgement. It cannot schedule. Its topic is one channel per
// subscription, the producer writing the same body to each.
type ChanPeer struct{}

// Name implements [Peer].
func (ChanPeer) Name() string { return "chan" }

// OpenQueue implements [Peer].
func (ChanPeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	return &chanQueue{ch: make(chan []byte, cfg.capacity())}, nil
}

// OpenTopic implements [TopicPeer].
func (ChanPeer) OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error) {
	t := &chanTopic{subs: make([]*chanQueue, subs)}
	for i := range t.subs {
		t.subs[i] = &chanQueue{ch: make(chan []byte, cfg.capacity())}
	}
	return t, nil
}

type chanQueue struct {
	ch        chan []byte
	closeOnce sync.Once
}

func (q *chanQueue) Send(ctx context.Context, body []byte) error {
	select {
	case q.ch <- body:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *chanQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	return chanReceiver{ch: q.ch}, nil
}

func (q *chanQueue) Count(ctx context.Context) (int64, error) { return int64(len(q.ch)), nil }

// Close closes the channel; no sender may be running.
func (q *chanQueue) Close() error {
	q.closeOnce.Do(func() { close(q.ch) })
	return nil
}

type chanReceiver struct{ ch <-chan []byte }

func chanDelivery(b []byte) Delivery { return Delivery{Body: b} }

func (r chanReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	return receiveFromChan(ctx, r.ch, max, buf, chanDelivery)
}

func (chanReceiver) Complete(context.Context, Delivery) error { return nil }
func (chanReceiver) Close() error                             { return nil }

type chanTopic struct{ subs []*chanQueue }

func (t *chanTopic) Send(ctx context.Context, body []byte) error {
	for _, s := range t.subs {
		if err := s.Send(ctx, body); err != nil {
			return err
		}
	}
	return nil
}

func (t *chanTopic) NewReceiver(ctx context.Context, sub int) (Receiver, error) {
	return t.subs[sub].NewReceiver(ctx)
}

func (t *chanTopic) Close() error {
	for _, s := range t.subs {
		s.Close()
	}
	return nil
}
