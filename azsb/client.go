package azsb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// Client is azsb's *azservicebus.Client: the same methods with the same
// parameters, creating senders and receivers over a minibus namespace
// instead of an AMQP connection. Get one from [NewClient]. A Client is safe
// for concurrent use.
type Client struct {
	ns *minibus.Namespace

	mu     sync.Mutex
	closed bool
	next   uint64
	links  map[uint64]interface{ closeLink() }

	// acceptTimeout is how long AcceptNextSession* waits, on the namespace
	// clock, when its ctx has no deadline, as the service does ("up to one
	// minute").
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
// *amqp.Error, a queue without sessions the service's amqp:not-allowed.
// sessionID may be anything up to 128 characters, "" included: the
// session "" is locked and can keep state, but never has a message, since
// a message whose SessionID is "" has no session (see the package
// documentation).
func (c *Client) AcceptSessionForQueue(ctx context.Context, queueName string, sessionID string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{queue: queueName}, &sessionID, options)
}

// AcceptSessionForSubscription locks the session sessionID of a
// session-enabled subscription. As AcceptSessionForQueue.
func (c *Client) AcceptSessionForSubscription(ctx context.Context, topicName string, subscriptionName string, sessionID string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{topic: topicName, sub: subscriptionName}, &sessionID, options)
}

// AcceptNextSessionForQueue waits for a session of the queue that no
// receiver holds and that has a message available, and locks it (the one
// whose first available message is oldest). When none comes before ctx's
// deadline, or, for a ctx without one, within the minute the service
// waits, it returns an *azservicebus.Error with CodeTimeout, as the SDK
// does when the service answers com.microsoft:timeout; like the SDK's, that
// error is not context.DeadlineExceeded. A cancelled ctx gives its error
// unchanged, and so does a ctx with less than 1 ms left when the call
// starts (the SDK then asks the service for no timeout, and the ctx ends
// the wait).
func (c *Client) AcceptNextSessionForQueue(ctx context.Context, queueName string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{queue: queueName}, nil, options)
}

// AcceptNextSessionForSubscription waits for a session of the subscription
// with a message available and locks it. As AcceptNextSessionForQueue.
func (c *Client) AcceptNextSessionForSubscription(ctx context.Context, topicName string, subscriptionName string, options *azservicebus.SessionReceiverOptions) (*SessionReceiver, error) {
	return c.acceptSession(ctx, entityRef{topic: topicName, sub: subscriptionName}, nil, options)
}

// listSessionsPageSize is the number of session ids the SDK asks for in one
// get-message-sessions request; a shorter page is the last.
const listSessionsPageSize = 100

// NewListSessionsForQueuePager returns a pager over the ids of the sessions
// of a session-enabled queue that have messages or state (minibus's
// Queue.ListSessions: active, locked or deferred messages, not scheduled or
// dead-lettered ones), sorted, in pages of 100, the SDK's page size. As in
// the SDK each page is a request of its own, which skips the ids the
// earlier pages had: a session that appears or goes between two pages can
// shift the rest. The last page is the first one shorter than 100 (empty
// when the count is a multiple of 100); then More reports false.
//
// Errors come from NextPage, as the SDK's: an empty name is "a queue or
// subscription was not specified"; a missing queue is an *azservicebus.Error
// with CodeNotFound (the service's 404); a queue without sessions is what
// the SDK makes of the service's refusal, an *azservicebus.Error with
// CodeConnectionLost (the SDK v1.11 retries a management answer with a
// status other than 401, 404, 408, 410, 500 and 503 as a connection fault
// and reports it so; azsb answers at once, without the retries' delay);
// every error also wraps minibus's (errors.Is finds minibus.ErrNotFound or
// minibus.ErrInvalidArgument). A cancelled ctx gives its error unchanged.
//
// options.SessionStateUpdatedAfter is accepted and ignored: minibus keeps
// no time of a session state's last update, so the pager lists every
// session with messages or state, as without the option (the service would
// list only the sessions whose state was set after that time).
func (c *Client) NewListSessionsForQueuePager(queueName string, options *azservicebus.ListSessionsOptions) *runtime.Pager[azservicebus.ListSessionsResponse] {
	return c.newListSessionsPager(entityRef{queue: queueName})
}

// NewListSessionsForSubscriptionPager returns a pager over the ids of the
// sessions of a session-enabled subscription that have messages or state.
// As NewListSessionsForQueuePager; a missing topic or subscription is
// CodeNotFound.
func (c *Client) NewListSessionsForSubscriptionPager(topicName string, subscriptionName string, options *azservicebus.ListSessionsOptions) *runtime.Pager[azservicebus.ListSessionsResponse] {
	return c.newListSessionsPager(entityRef{topic: topicName, sub: subscriptionName})
}

func (c *Client) newListSessionsPager(e entityRef) *runtime.Pager[azservicebus.ListSessionsResponse] {
	skip, done := 0, false
	return runtime.NewPager(runtime.PagingHandler[azservicebus.ListSessionsResponse]{
		More: func(azservicebus.ListSessionsResponse) bool { return !done },
		Fetcher: func(ctx context.Context, _ *azservicebus.ListSessionsResponse) (azservicebus.ListSessionsResponse, error) {
			page, err := c.listSessions(ctx, e, skip)
			if err != nil {
				done = true
				return azservicebus.ListSessionsResponse{}, err
			}
			skip += len(page)
			if len(page) < listSessionsPageSize {
				done = true
			}
			return azservicebus.ListSessionsResponse{Sessions: page}, nil
		},
	})
}

// listSessions returns the page of the entity's session ids that starts
// after skip of them: nil when there are none left.
func (c *Client) listSessions(ctx context.Context, e entityRef, skip int) ([]string, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	ent, sessions, err := c.resolve(e)
	if errors.Is(err, minibus.ErrNotFound) {
		return nil, withCode(azservicebus.CodeNotFound, fmt.Errorf("rpc: failed, status code 404 and description: %w", err))
	}
	if err != nil {
		return nil, mapError(err)
	}
	ids, err := ent.ListSessions(ctx)
	if err != nil {
		if !sessions && errors.Is(err, minibus.ErrInvalidArgument) {
			return nil, withCode(azservicebus.CodeConnectionLost,
				fmt.Errorf("rpc: failed, status code 400 and description: %s (%w)", textNotSessionful, err))
		}
		return nil, mapError(err)
	}
	if skip >= len(ids) {
		return nil, nil
	}
	return slices.Clip(ids[skip:min(skip+listSessionsPageSize, len(ids))]), nil
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

// String names the entity as the SDK's entity paths do.
func (e entityRef) String() string {
	if e.queue != "" {
		return e.queue
	}
	return e.topic + "/Subscriptions/" + e.sub
}

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
	ListSessions(context.Context) ([]string, error)
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

// checkOpen fails once the client is closed, as the SDK's calls do.
func (c *Client) checkOpen() error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return clientError(minibus.ErrClosed, textClientClosed)
	}
	return nil
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
	if err := c.checkOpen(); err != nil {
		return nil, err
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
		msr, err = c.acceptNext(ctx, e, ent, o)
	}
	if err != nil {
		if !sessions && errors.Is(err, minibus.ErrInvalidArgument) {
			return nil, withCondition(amqp.ErrCondNotAllowed, textNotSessionful, err)
		}
		return nil, mapError(err)
	}
	sr := &SessionReceiver{c: c, r: msr, mode: mode, key: holderKey{entityKey(ent), msr.SessionID()}, lockedUntil: msr.LockedUntil()}
	holders.Store(sr.key, sr) // before add, so that a Close racing with add removes it
	id, err := c.add(sr)
	if err != nil {
		sr.closeLink()
		return nil, err
	}
	sr.id = id
	return sr, nil
}

// acceptNext is AcceptNextSession with the SDK's timeouts. The SDK asks the
// service to wait until shortly before ctx's deadline (com.microsoft:timeout
// on the link, when at least 1 ms is left), and the service waits a minute
// when ctx has none: here a minute of the namespace clock, like every wait
// of the broker, so that a mock clock moved a minute ends it and nothing
// waits a real minute. Its answer, com.microsoft:timeout, becomes an
// *azservicebus.Error with CodeTimeout that hides the ctx's error.
func (c *Client) acceptNext(ctx context.Context, e entityRef, ent receivable, o *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error) {
	serviceWait := true
	if deadline, ok := ctx.Deadline(); !ok {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		t := c.ns.Clock().AfterFunc(c.acceptTimeout, func() { cancel(errServiceWait) })
		defer t.Stop()
	} else if time.Until(deadline) < time.Millisecond {
		serviceWait = false // the SDK sends no timeout: the ctx ends the wait
	}
	msr, err := ent.AcceptNextSession(ctx, o)
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.Is(err, context.Canceled) && context.Cause(ctx) == errServiceWait)
	if serviceWait && timedOut {
		return nil, withCode(azservicebus.CodeTimeout,
			fmt.Errorf("azsb: no session of %s had a message available in time (the service's com.microsoft:timeout)", e))
	}
	return msr, err
}

// errServiceWait ends an AcceptNextSession whose ctx has no deadline when
// the service's wait is over.
var errServiceWait = errors.New("azsb: the service's wait for a session is over")

func minibusMode(m azservicebus.ReceiveMode) minibus.ReceiveMode {
	if m == azservicebus.ReceiveModeReceiveAndDelete {
		return minibus.ReceiveModeReceiveAndDelete
	}
	return minibus.ReceiveModePeekLock
}
