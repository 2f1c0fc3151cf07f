package e2e_test

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/stretchr/testify/require"
)

// Messages go out only against link credit, oldest first (W5, L1).

// With no credit nothing is delivered, and the message stays available to
// others; credit given later brings it.
func TestProto_CreditZero(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	r := e.receiver(s, "orders", protoPeekLock(-1)) // manual credit, none issued
	e.send(q, "one")
	protoReceiveNothing(t, r)

	other := e.receiver(s, "orders", protoPeekLock(1))
	m := e.receive(other)
	require.Equal(t, "one", protoBody(m))
	require.Equal(t, uint32(1), protoDeliveries(t, m), "not taken by the link without credit")
	require.NoError(t, other.AcceptMessage(e.ctx, m))
	require.NoError(t, other.Close(e.ctx))

	e.send(q, "two")
	protoReceiveNothing(t, r)
	require.NoError(t, r.IssueCredit(1))
	m = e.receive(r)
	require.Equal(t, "two", protoBody(m))
	require.NoError(t, r.AcceptMessage(e.ctx, m))
}

// A link with credit 1 holds one message at a time: the others stay
// available to another link.
func TestProto_CreditOne(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	r := e.receiver(s, "orders", protoPeekLock(1))
	e.send(q, "m0", "m1", "m2")
	first := e.receive(r)
	require.Equal(t, "m0", protoBody(first))

	other := e.receiver(s, "orders", protoPeekLock(10))
	for _, want := range []string{"m1", "m2"} {
		m := e.receive(other)
		require.Equal(t, want, protoBody(m))
		require.NoError(t, other.AcceptMessage(e.ctx, m))
	}
	require.NoError(t, other.Close(e.ctx))
	require.NoError(t, r.AcceptMessage(e.ctx, first))

	// One by one, in order, as each settlement renews the credit.
	e.send(q, "a", "b", "c")
	for _, want := range []string{"a", "b", "c"} {
		m := e.receive(r)
		require.Equal(t, want, protoBody(m))
		require.NoError(t, r.AcceptMessage(e.ctx, m))
	}
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// A link with credit N takes N messages and no more.
func TestProto_CreditN(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	bodies := make([]string, 25)
	for i := range bodies {
		bodies[i] = fmt.Sprint("m", i)
	}
	e.send(q, bodies...)
	r := e.receiver(s, "orders", protoPeekLock(10))
	held := make([]*amqp.Message, 10)
	for i := range held {
		held[i] = e.receive(r)
		require.Equal(t, bodies[i], protoBody(held[i]))
	}
	// The other 15 were not taken: another link gets them, in order.
	other := e.receiver(s, "orders", protoPeekLock(100))
	for _, want := range bodies[10:] {
		m := e.receive(other)
		require.Equal(t, want, protoBody(m))
		require.NoError(t, other.AcceptMessage(e.ctx, m))
	}
	for _, m := range held {
		require.NoError(t, r.AcceptMessage(e.ctx, m))
	}
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// Credit 1000 with many messages: all arrive, in order.
func TestProto_CreditThousand(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	const n = 3000
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprint("m", i)
	}
	e.send(q, bodies...)
	s := e.session(nil)
	start := time.Now()
	r := e.receiver(s, "orders", protoReceiveAndDelete(1000))
	for i := range n {
		m := e.receive(r)
		require.Equal(t, bodies[i], protoBody(m))
	}
	t.Logf("%d messages at credit 1000, receive-and-delete: %v", n, time.Since(start))
	require.Zero(t, q.RuntimeProperties().TotalMessageCount)
}

// A drain is answered at once (W5): DrainCredit returns with nothing
// available, and the credit is spent (nothing comes after it); with
// messages available, each is either delivered before the drain's answer
// or left available (go-amqp drains with link-credit 0, taking back what
// it gave), none lost or locked.
func TestProto_Drain(t *testing.T) {
	e := newProtoEnv(t)
	q := e.queue("orders", nil)
	s := e.session(nil)
	r := e.receiver(s, "orders", protoPeekLock(-1))

	require.NoError(t, r.IssueCredit(5))
	start := time.Now()
	require.NoError(t, r.DrainCredit(e.ctx, nil))
	t.Logf("drain with nothing available: %v", time.Since(start))
	require.Nil(t, r.Prefetched())
	e.send(q, "after the drain")
	protoReceiveNothing(t, r)
	require.NoError(t, r.IssueCredit(1))
	m := e.receive(r)
	require.Equal(t, "after the drain", protoBody(m))
	require.NoError(t, r.AcceptMessage(e.ctx, m))

	e.send(q, "one", "two", "three")
	require.NoError(t, r.IssueCredit(5))
	m = e.receive(r) // the credit has arrived
	got := []string{protoBody(m)}
	require.NoError(t, r.AcceptMessage(e.ctx, m))
	require.NoError(t, r.DrainCredit(e.ctx, nil))
	for m := r.Prefetched(); m != nil; m = r.Prefetched() {
		got = append(got, protoBody(m))
		require.NoError(t, r.AcceptMessage(e.ctx, m))
	}
	protoReceiveNothing(t, r)
	other := e.receiver(s, "orders", protoPeekLock(10))
	for len(got) < 3 {
		m := e.receive(other)
		require.Equal(t, uint32(1), protoDeliveries(t, m), "%q was given back uncounted (L15)", protoBody(m))
		got = append(got, protoBody(m))
		require.NoError(t, other.AcceptMessage(e.ctx, m))
	}
	require.Equal(t, []string{"one", "two", "three"}, got)
}
