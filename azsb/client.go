package azsb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/minibus-go/minibus"
)

// Client is azsb's *azservicebus.Client: the same methods with the same
// parameters, creating senders and receivers over a minibus namespace
// instead of an AMQP connection. Get one from [NewClient]. A Client is safe
// for concurrent use.
//
// NewListSessionsForQueuePager and NewListSessionsForSubscriptionPager are
// not there yet: minibus has no call that lists an entity's sessions.
type Client struct {
	ns *minibus.Namespace

	mu     sync.Mutex
	closed bool
	next   uint64
	links  map[uint64]interface{ closeLink() }

	// acceptTimeout is how long AcceptNextSession* waits when its ctx has
	// no deadline, as the service does ("up to one minute").
	acceptTimeout time.Duration
}

// defaultAcceptTimeout is how long the service waits for a session in
// AcceptNextSession before it answers com.microsoft:timeout.
const defaultAcceptTimeout = time.Minute

// NewClient returns a Client over ns. It stands where
// azservicebus.NewClient or azservicebus.NewClientFromConnectionString
// stands in production. options are accepted for the same reason and
// ignored: minibus runs in the process, so a custom endpoint, TLS
// configuration, web sockets, an application id and retry options have
// nothing to act on (no function of them is ever called). Closing the
// Client does not close ns.
func NewClient(ns *minibus.Namespace, options ...*azservicebus.ClientOptions) *Client {
	return &Client{ns: ns, links: map[uint64]interface{ closeLink() }{}, acceptTimeout: defaultAcceptTimeout}
}

// add registers a sender or receiver, so that Close closes it; it fails
// once the client is closed, as the SDK's do.
func (c *Client) add(l interface{ closeLink() }) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, clientError(minibus.ErrClosed, textClientClosed)
	}
	c.next++
	c.links[c.next] = l
	return c.next, nil
}

func (c *Client) remove(id uint64) {
	c.mu.Lock()
	delete(c.links, id)
	c.mu.Unlock()
}

// NewSender returns a Sender for the queue or topic named queueOrTopic. As
// in the SDK it opens nothing: a missing entity is reported by the first
// call, as an *azservicebus.Error with CodeNotFound. options is unused, as
// it is empty in the SDK.
func (c *Client) NewSender(queueOrTopic string, options *azservicebus.NewSenderOptions) (*Sender, error) {
	s := &Sender{c: c, name: queueOrTopic}
	id, err := c.add(s)
	if err != nil {
		return nil, err
	}
	s.id = id
	return s, nil
}

// NewReceiverForQueue returns a Receiver for the queue, or for its
// dead-letter or transfer dead-letter queue (options.SubQueue). Like the
// SDK's it opens nothing: a missing queue is reported by the first call.
// An invalid receive mode or sub-queue is an error here, as in the SDK.
func (c *Client) NewReceiverForQueue(queueName string, options *azservicebus.ReceiverOptions) (*Receiver, error) {
	return c.newReceiver(entityRef{queue: queueName}, options)
}

// NewReceiverForSubscription returns a Receiver for the subscription, or
// for its dead-letter or transfer dead-letter queue. As NewReceiverForQueue.
func (c *Client) NewReceiverForSubscription(topicName string, subscriptionName string, options *azservicebus.ReceiverOptions) (*Receiver, error) {
	return c.newReceiver(entityRef{topic: topicName, sub: subscriptionName}, options)
}

func (c *Client) newReceiver(e entityRef, options *azservicebus.ReceiverOptions) (*Receiver, error) {
	r := &Receiver{c: c, e: e}
	if options != nil {
		if err := checkReceiveMode(options.ReceiveMode); err != nil {
			return nil, err
		}
		r.mode = options.ReceiveMode
		switch options.SubQueue {
		case 0, azservicebus.SubQueueDeadLetter, azservicebus.SubQueueTransfer:
			r.subQueue = options.SubQueue
		default:
			return nil, clientError(minibus.ErrInvalidArgument, fmt.Sprintf("unknown SubQueue %d", options.SubQueue))
		}
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	id, err := c.add(r)
	if err != nil {
		return nil, err
	}
	r.id = id
	return r, nil
}

func checkReceiveMode(m azservicebus.ReceiveMode) error {
	if m != azservicebus.ReceiveModePeekLock && m != azservicebus.ReceiveModeReceiveAndDelete {
		return clientError(minibus.ErrInvalidArgument,
			fmt.Sprintf("invalid receive mode %d, must be either azservicebus.PeekLock or azservicebus.ReceiveAndDelete", m))
	}
	return nil
}

// AcceptSessionForQueue locks the session sessionID of a session-enabled
// queue and returns its SessionReceiver. Like the SDK's it acts at once: a
// missing queue is an *azservicebus.Error with CodeNotFound, a session held
// by another receiver the service's com.microsoft:session-cannot-be-locked
// *amqp.Error.
func (c *Client) AcceptSessionForQueue(ctx context.Context, queueName string, sessionID string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{queue: queueName}, &sessionID, options)
}

// AcceptSessionForSubscription locks the session sessionID of a
// session-enabled subscription. As AcceptSessionForQueue.
func (c *Client) AcceptSessionForSubscription(ctx context.Context, topicName string, subscriptionName string, sessionID string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{topic: topicName, sub: subscriptionName}, &sessionID, options)
}

// AcceptNextSessionForQueue waits for a session of the queue with a message
// available and locks it. When none comes before ctx's deadline (or, for a
// ctx without one, within the minute the service waits) it returns an
// *azservicebus.Error with CodeTimeout; a cancelled ctx gives
// context.Canceled.
func (c *Client) AcceptNextSessionForQueue(ctx context.Context, queueName string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{queue: queueName}, nil, options)
}

// AcceptNextSessionForSubscription waits for a session of the subscription
// with a message available and locks it. As AcceptNextSessionForQueue.
func (c *Client) AcceptNextSessionForSubscription(ctx context.Context, topicName string, subscriptionName string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{topic: topicName, sub: subscriptionName}, nil, options)
}

// Close closes every Sender, Receiver and SessionReceiver made by the
// client; their later calls, and the client's, fail with CodeClosed (and
// minibus.ErrClosed). The namespace stays open. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	links := make([]interface{ closeLink() }, 0, len(c.links))
	for _, l := range c.links {
		links = append(links, l)
	}
	clear(c.links)
	c.mu.Unlock()
	for _, l := range links {
		l.closeLink()
	}
	return nil
}

// entityRef names a queue, or a topic's subscription.
type entityRef struct{ queue, topic, sub string }

func (e entityRef) check() error {
	if e.queue == "" && (e.topic == "" || e.sub == "") {
		return clientError(minibus.ErrInvalidArgument, textNoEntity)
	}
	return nil
}

// receivable is a queue or a subscription.
type receivable interface {
	NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
	AcceptSession(context.Context, string, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
	AcceptNextSession(context.Context, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
}

// resolve finds the entity, and reports whether it requires sessions.
func (c *Client) resolve(e entityRef) (receivable, bool, error) {
	if e.queue != "" {
		q, err := c.ns.Queue(e.queue)
		if err != nil {
			return nil, false, err
		}
		return q, q.Properties().RequiresSession, nil
	}
	t, err := c.ns.Topic(e.topic)
	if err != nil {
		return nil, false, err
	}
	s, err := t.Subscription(e.sub)
	if err != nil {
		return nil, false, err
	}
	return s, s.Properties().RequiresSession, nil
}

func (c *Client) acceptSession(ctx context.Context, e entityRef, sessionID *string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	var mode azservicebus.ReceiveMode
	if options != nil {
		if err := checkReceiveMode(options.ReceiveMode); err != nil {
			return nil, err
		}
		mode = options.ReceiveMode
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, clientError(minibus.ErrClosed, textClientClosed)
	}
	ent, sessions, err := c.resolve(e)
	if err != nil {
		return nil, mapError(err)
	}
	o := &minibus.SessionReceiverOptions{ReceiveMode: minibusMode(mode)}
	var msr *minibus.SessionReceiver
	if sessionID != nil {
		msr, err = ent.AcceptSession(ctx, *sessionID, o)
	} else {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.acceptTimeout)
			defer cancel()
		}
		msr, err = ent.AcceptNextSession(ctx, o)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, withCode(azservicebus.CodeTimeout, err)
		}
	}
	if err != nil {
		if !sessions && errors.Is(err, minibus.ErrInvalidArgument) {
			return nil, withCondition("amqp:not-allowed", textNotSessionful, err)
		}
		return nil, mapError(err)
	}
	sr := &SessionReceiver{c: c, r: msr, mode: mode}
	id, err := c.add(sr)
	if err != nil {
		_ = msr.Close(context.Background())
		return nil, err
	}
	sr.id = id
	return sr, nil
}

func minibusMode(m azservicebus.ReceiveMode) minibus.ReceiveMode {
	if m == azservicebus.ReceiveModeReceiveAndDelete {
		return minibus.ReceiveModeReceiveAndDelete
	}
	return minibus.ReceiveModePeekLock
}
