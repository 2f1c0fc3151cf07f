package bench

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// WatermillPeer is watermill's pubsub/gochannel, configured as watermill's
// own gochannel benchmark does for throughput: OutputChannelBuffer set to the
// workload's capacity, not persistent, Publish not blocking until the
// subscriber acks. Each message is message.NewMessage(watermill.NewUUID(),
// body), published with Publish (it returns once gochannel has taken the
// message: the send is settled as far as gochannel has a broker). gochannel
// is pub/sub, not a queue: the queue is one subscription, subscribed when the
// queue opens, and every receiver reads that subscription's channel; Receive
// takes what is buffered there, up to the maximum, and Complete is
// Message.Ack. There are no lock timeouts, no redelivery except on Nack and
// no scheduling. Its topic subscribes once per subscription: gochannel sends
// every message to every subscriber.
type WatermillPeer struct{}

const watermillTopicName = "bench"

// Name implements [Peer].
func (WatermillPeer) Name() string { return "watermill" }

// OpenQueue implements [Peer].
func (WatermillPeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	t, err := openWatermill(cfg, 1)
	if err != nil {
		return nil, err
	}
	return watermillQueue{t}, nil
}

// OpenTopic implements [TopicPeer].
func (WatermillPeer) OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error) {
	return openWatermill(cfg, subs)
}

func openWatermill(cfg Config, subs int) (*watermillTopic, error) {
	ps := gochannel.NewGoChannel(gochannel.Config{
		OutputChannelBuffer: int64(cfg.capacity()),
	}, watermill.NopLogger{})
	t := &watermillTopic{ps: ps, subs: make([]<-chan *message.Message, subs)}
	// gochannel ends a subscription when its context ends or on Close; the
	// subscriptions live as long as the topic, so Close ends them.
	for i := range t.subs {
		ch, err := ps.Subscribe(context.Background(), watermillTopicName)
		if err != nil {
			ps.Close()
			return nil, err
		}
		t.subs[i] = ch
	}
	return t, nil
}

type watermillTopic struct {
	ps   *gochannel.GoChannel
	subs []<-chan *message.Message
}

func (t *watermillTopic) Send(ctx context.Context, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.ps.Publish(watermillTopicName, message.NewMessage(watermill.NewUUID(), body))
}

func (t *watermillTopic) NewReceiver(ctx context.Context, sub int) (Receiver, error) {
	if sub < 0 || sub >= len(t.subs) {
		return nil, fmt.Errorf("bench: watermill: no subscription %d", sub)
	}
	return watermillReceiver{ch: t.subs[sub]}, nil
}

func (t *watermillTopic) Close() error { return t.ps.Close() }

// watermillQueue is the one-subscription topic seen as a queue.
type watermillQueue struct{ *watermillTopic }

func (q watermillQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	return q.watermillTopic.NewReceiver(ctx, 0)
}

type watermillReceiver struct{ ch <-chan *message.Message }

func watermillDelivery(m *message.Message) Delivery { return Delivery{Body: m.Payload, ref: m} }

func (r watermillReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	return receiveFromChan(ctx, r.ch, max, buf, watermillDelivery)
}

func (r watermillReceiver) Complete(ctx context.Context, d Delivery) error {
	d.ref.(*message.Message).Ack()
	return nil
}

func (watermillReceiver) Close() error { return nil }
