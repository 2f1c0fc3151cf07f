package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus"
)

// protoSessionFilter is the Service Bus session filter, and its descriptor
// as go-amqp sends it: described (domain 0x137, id 0xc) (W7).
const (
	protoSessionFilter     = "com.microsoft:session-filter"
	protoSessionFilterCode = 0x000001370000000c
)

// protoRoundTrip sends body on snd and receives it on r.
func (e *protoEnv) roundTrip(snd *amqp.Sender, r *amqp.Receiver, body string) {
	e.t.Helper()
	require.NoError(e.t, snd.Send(e.ctx, amqp.NewMessage([]byte(body)), nil))
	m := e.receive(r)
	require.Equal(e.t, body, protoBody(m))
	require.NoError(e.t, r.AcceptMessage(e.ctx, m))
}

// A connection with a short idle-time-out stays open through several of
// them without traffic: the server sends empty frames within half of what
// the client announced (W1). go-amqp closes a connection that hears nothing
// for its IdleTimeout. The one real-time wait of these tests, bounded.
func TestProto_IdleKeepAlive(t *testing.T) {
	e := newProtoEnv(t)
	e.queue("orders", nil)
	c := e.dial(&amqp.ConnOptions{IdleTimeout: time.Second})
	s, err := c.NewSession(e.ctx, nil)
	require.NoError(t, err)
	snd := e.sender(s, "orders")
	r := e.receiver(s, "orders", protoPeekLock(1))
	e.roundTrip(snd, r, "before")
	select {
	case <-c.Done():
		require.FailNow(t, "the connection closed while idle", "%v", c.Err())
	case <-time.After(3500 * time.Millisecond):
	}
	e.roundTrip(snd, r, "after three idle-time-outs")
}

// Messages span frames at the peer's max-frame-size both ways (W1): 300
// KiB delivered to clients that announce 512 and 4096 octets, and 1.5 MiB
// sent in frames of the server's own max-frame-size (1 MiB). The sender
// attach carries the queue's MaxMessageSizeInKilobytes × 1024 (W4).
func TestProto_MultiFrame(t *testing.T) {
	e := newProtoEnv(t)
	rng := rand.New(rand.NewPCG(1, 2))
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	for _, max := range []uint32{512, 4096, 0} {
		t.Run(fmt.Sprint("max-frame-size ", max), func(t *testing.T) {
			name := fmt.Sprint("big-", max)
			e.queue(name, &minibus.QueueProperties{MaxMessageSizeInKilobytes: 2048})
			s := e.session(&amqp.ConnOptions{MaxFrameSize: max})
			snd := e.sender(s, name)
			require.Equal(t, uint64(2048<<10), snd.MaxMessageSize())
			r := e.receiver(s, name, protoReceiveAndDelete(1))
			size := 300 << 10
			if max == 0 {
				size = 1536 << 10
			}
			body := payload(size)
			require.NoError(t, snd.Send(e.ctx, amqp.NewMessage(body), nil))
			m := e.receive(r)
			require.True(t, bytes.Equal(body, m.GetData()), "the body crossed intact")
		})
	}
}

// An attach to an address that names no entity fails with amqp:not-found,
// naming the address (W2), for receivers and senders alike.
func TestProto_MissingNode(t *testing.T) {
	e := newProtoEnv(t)
	e.queue("orders", nil)
	s := e.session(nil)
	for _, addr := range []string{"nope", "nope/$management", "orders/Subscriptions/x", "sb://host/nope/$DeadLetterQueue"} {
		_, err := s.NewReceiver(e.ctx, addr, nil)
		var ae *amqp.Error
		require.True(t, errors.As(err, &ae), "%s: want an *amqp.Error, got %v", addr, err)
		require.Equal(t, amqp.ErrCondNotFound, ae.Condition, addr)
		require.Regexp(t, `"(nope|orders)"`, ae.Description)

		_, err = s.NewSender(e.ctx, addr, nil)
		require.True(t, errors.As(err, &ae), "%s: want an *amqp.Error, got %v", addr, err)
		require.Equal(t, amqp.ErrCondNotFound, ae.Condition, addr)
	}
	// The session is fine.
	e.roundTrip(e.sender(s, "orders"), e.receiver(s, "orders", protoPeekLock(1)), "still here")
}

// A receiver attach with the session filter, described as go-amqp sends it,
// accepts that session, or with a null value the next one; the filter comes
// back described with the session id, and the link properties carry the
// session's lock end (W7). A session held elsewhere is
// com.microsoft:session-cannot-be-locked, none within
// com.microsoft:timeout is com.microsoft:timeout, and a plain receiver on
// a queue that requires sessions is amqp:not-allowed (W5).
func TestProto_SessionFilter(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("sessions", &minibus.QueueProperties{RequiresSession: true})
	require.NoError(t, q.SendMessages(e.ctx, []*minibus.Message{
		{Body: []byte("s1-a"), SessionID: "s1"},
		{Body: []byte("s2-a"), SessionID: "s2"},
	}, nil))
	s := e.session(nil)
	withFilter := func(value any, props map[string]any) *amqp.ReceiverOptions {
		o := protoPeekLock(1)
		o.Filters = []amqp.LinkFilter{amqp.NewLinkFilter(protoSessionFilter, protoSessionFilterCode, value)}
		o.Properties = props
		return o
	}
	r1 := e.receiver(s, "sessions", withFilter("s1", nil))
	require.Equal(t, "s1", r1.LinkSourceFilterValue(protoSessionFilter))
	require.IsType(t, int64(0), r1.Properties()["com.microsoft:locked-until-utc"])
	m := e.receive(r1)
	require.Equal(t, "s1-a", protoBody(m))
	require.NoError(t, r1.AcceptMessage(e.ctx, m))

	next := e.receiver(s, "sessions", withFilter(nil, nil))
	require.Equal(t, "s2", next.LinkSourceFilterValue(protoSessionFilter))
	m = e.receive(next)
	require.Equal(t, "s2-a", protoBody(m))
	require.NoError(t, next.AcceptMessage(e.ctx, m))

	var ae *amqp.Error
	_, err := s.NewReceiver(e.ctx, "sessions", withFilter("s1", nil))
	require.True(t, errors.As(err, &ae), "want an *amqp.Error, got %v", err)
	require.Equal(t, amqp.ErrCond("com.microsoft:session-cannot-be-locked"), ae.Condition)

	_, err = s.NewReceiver(e.ctx, "sessions", withFilter(nil, map[string]any{"com.microsoft:timeout": uint32(50)}))
	require.True(t, errors.As(err, &ae), "want an *amqp.Error, got %v", err)
	require.Equal(t, amqp.ErrCond("com.microsoft:timeout"), ae.Condition)

	_, err = s.NewReceiver(e.ctx, "sessions", protoPeekLock(1))
	require.True(t, errors.As(err, &ae), "want an *amqp.Error, got %v", err)
	require.Equal(t, amqp.ErrCondNotAllowed, ae.Condition)
	require.Contains(t, ae.Description, `"sessions"`)
}

// A client that vanishes (its socket closed, no detach, end or close)
// holding a message under peek-lock leaves it locked until the lock ends
// (L5, L6); then another client receives it, its delivery counted.
func TestProto_VanishedPeekLock(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	e.send(q, "locked")
	c, nc := e.dialOver()
	s, err := c.NewSession(e.ctx, nil)
	require.NoError(t, err)
	m := e.receive(e.receiver(s, "orders", protoPeekLock(1)))
	require.Equal(t, uint32(1), protoDeliveries(t, m))
	lockedUntil, ok := m.Annotations["x-opt-locked-until"].(time.Time)
	require.True(t, ok, "x-opt-locked-until is a timestamp (W5)")
	require.NoError(t, nc.Close())

	r := e.receiver(e.session(nil), "orders", protoPeekLock(1))
	protoReceiveNothing(t, r)
	e.env.Advance(lockedUntil.Sub(e.ns.Now()) - time.Second)
	protoReceiveNothing(t, r)
	e.env.Advance(2 * time.Second)
	m = e.receive(r)
	require.Equal(t, "locked", protoBody(m))
	require.Equal(t, uint32(2), protoDeliveries(t, m))
	require.NoError(t, r.AcceptMessage(e.ctx, m))
}

// Many connections come and go, cleanly, abruptly, half-way through the
// handshake or speaking garbage, while another one keeps exchanging
// messages undisturbed.
func TestProto_ConnectionChurn(t *testing.T) {
	e := newProtoEnv(t)
	e.queue("orders", nil)
	e.queue("churn", nil)
	s := e.session(nil)
	snd, r := e.sender(s, "orders"), e.receiver(s, "orders", protoPeekLock(10))
	e.roundTrip(snd, r, "before")

	addr := e.srv.Addr().String()
	kinds := []func(ctx context.Context) error{
		func(context.Context) error { // connect and go
			nc, err := net.DialTimeout("tcp", addr, protoTimeout)
			if err != nil {
				return err
			}
			return nc.Close()
		},
		func(context.Context) error { // half a protocol header
			nc, err := net.DialTimeout("tcp", addr, protoTimeout)
			if err != nil {
				return err
			}
			nc.Write([]byte("AMQP\x03"))
			return nc.Close()
		},
		func(context.Context) error { // garbage
			nc, err := net.DialTimeout("tcp", addr, protoTimeout)
			if err != nil {
				return err
			}
			nc.Write(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 64))
			return nc.Close()
		},
		func(ctx context.Context) error { // a clean client that sends
			c, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.NewSession(ctx, nil)
			if err != nil {
				return err
			}
			snd, err := s.NewSender(ctx, "churn", nil)
			if err != nil {
				return err
			}
			if err := snd.Send(ctx, amqp.NewMessage([]byte("churn")), nil); err != nil {
				return err
			}
			return c.Close()
		},
		func(ctx context.Context) error { // a client that vanishes with a receiver attached
			nc, err := net.DialTimeout("tcp", addr, protoTimeout)
			if err != nil {
				return err
			}
			c, err := amqp.NewConn(ctx, nc, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.NewSession(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := s.NewReceiver(ctx, "churn", &amqp.ReceiverOptions{Credit: 5}); err != nil {
				return err
			}
			return nc.Close()
		},
	}
	const workers, each = 4, 50
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := kinds[(w+i)%len(kinds)](e.ctx); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range 20 {
		e.roundTrip(snd, r, fmt.Sprint("during ", i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	e.roundTrip(snd, r, "after")
}

// A session link whose session lock ends while no receive waits on it (its
// credit spent) is detached then with com.microsoft:session-lock-lost
// (W7, SS5), so that a settlement on it cannot be taken for a success
// later; the session is free for another receiver.
func TestProto_SessionLockEndDetachesAnIdleLink(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("sessions", &minibus.QueueProperties{RequiresSession: true, LockDuration: 30 * time.Second})
	require.NoError(t, q.SendMessages(e.ctx, []*minibus.Message{{Body: []byte("a"), SessionID: "s"}}, nil))
	s := e.session(nil)
	o := protoPeekLock(-1) // credit given by hand
	o.Filters = []amqp.LinkFilter{amqp.NewLinkFilter(protoSessionFilter, protoSessionFilterCode, "s")}
	r := e.receiver(s, "sessions", o)
	require.NoError(t, r.IssueCredit(1))
	m := e.receive(r) // the one credit is spent: no receive waits now
	require.Equal(t, "a", protoBody(m))

	e.env.Advance(31 * time.Second)
	var le *amqp.LinkError
	_, err := r.Receive(e.ctx, nil)
	require.True(t, errors.As(err, &le), "want the link detached, got %v", err)
	require.NotNil(t, le.RemoteErr)
	require.Equal(t, amqp.ErrCond("com.microsoft:session-lock-lost"), le.RemoteErr.Condition)
	require.Contains(t, le.RemoteErr.Description, `"s"`)

	// The message comes back to the next receiver of the session (SS5).
	o.Credit = 1
	r2 := e.receiver(e.session(nil), "sessions", o)
	m = e.receive(r2)
	require.Equal(t, "a", protoBody(m))
	require.NoError(t, r2.AcceptMessage(e.ctx, m))
}
