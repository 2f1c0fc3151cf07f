package stress

// TestStress (T2): many goroutines send, receive in both modes, settle
// (complete, abandon, defer and fetch, dead-letter, drop the lock) and one
// goroutine moves the mock clock, on a queue and a topic with
// subscriptions, all at once under -race. Every call is recorded in a
// Jepsen-style ledger; after the workers stop, the test drains everything
// and proves that each accepted message (queue message or subscription copy)
// ended in exactly one documented terminal place:
//
//   - lost: accepted, never completed nor received-and-deleted;
//   - duplicated: received-and-deleted twice, completed twice, or both;
//   - unexpected: delivered but never accepted (or to the wrong place);
//   - redelivered: peek-lock redeliveries, reported, expected.
//
// It also checks, from the history: DeliveryCount never repeats for one
// message (two deliveries of the same count are a double delivery, I3, I6),
// a ReceiveMessages delivery never passes MaxDeliveryCount, no message is
// delivered after its ExpiresAt (I7), every dead-letter reason is one the
// broker documents (I10), and one sequence number names one message per
// entity (I5). Seeded: it prints the seed, and -stress.seed replays the
// random choices (not the goroutine interleaving).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/require"
)

var (
	stressSeed     = flag.Uint64("stress.seed", 0, "TestStress: seed of the random choices (0: a new one)")
	stressDuration = flag.Duration("stress.duration", 1500*time.Millisecond, "TestStress: how long the workers run")
)

const (
	stressLock     = 5 * time.Second
	stressTTL      = 10 * time.Minute
	stressMaxDeliv = 3
)

// stressItem is one accepted message in one place, and what happened to it.
type stressItem struct {
	accepted   bool
	terminals  []string
	counts     map[uint32]int // DeliveryCount -> deliveries seen with it
	seqs       map[int64]bool
	deliveries int
}

type stressLedger struct {
	mu         sync.Mutex
	items      map[string]*stressItem
	unexpected []string
	violations []string
	bySeq      map[string]string // entity/seq -> body
	deferred   map[string][]int64
}

func (l *stressLedger) item(key string) *stressItem {
	it := l.items[key]
	if it == nil {
		it = &stressItem{counts: map[uint32]int{}, seqs: map[int64]bool{}}
		l.items[key] = it
	}
	return it
}

func (l *stressLedger) violate(format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// stressPlace is a queue or subscription the workers receive from.
type stressPlace struct {
	name string
	recv func(opts *minibus.ReceiverOptions) (*minibus.Receiver, error)
}

// copyKey names a message in a place: the place, the body, and the copy
// (the "copy" property an action sets, R2).
func copyKey(place string, m *minibus.ReceivedMessage) string {
	c, _ := m.ApplicationProperties["copy"].(string)
	return place + "|" + string(m.Body) + "|" + c
}

func TestStress(t *testing.T) { stress(t, false) }

// TestStressFaults (T2): TestStress with a fault injector that fails about
// one call in ten of every kind the workers make (sends, receives,
// settlements, fetches of deferred messages) while they run. A failed call
// must change nothing (WithFaultInjector): the ledger takes a failed send
// as never accepted, so that a copy of it delivered would be unexpected,
// and a failed settlement as a lock left to end, so that a settlement
// applied anyway would end its message twice or lose it. The injector is
// off for the drain.
func TestStressFaults(t *testing.T) { stress(t, true) }

// errStressFault is what TestStressFaults's injector fails calls with.
var errStressFault = errors.New("stress: injected fault")

func stress(t *testing.T, faults bool) {
	seed := *stressSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay the choices with -stress.seed=%d)", seed, seed)
	mock := clock.NewMock()
	mock.Set(minibustest.Epoch)
	// injected reports whether err is the injector's; faulting turns it on.
	var faulting atomic.Bool
	var faultsInjected atomic.Int64
	injected := func(err error) bool { return faults && errors.Is(err, errStressFault) }
	opts := []minibus.Option{minibus.WithClock(mock)}
	if faults {
		faulting.Store(true)
		opts = append(opts, minibus.WithFaultInjector(func(minibus.Operation, string) error {
			if faulting.Load() && rand.IntN(10) == 0 {
				faultsInjected.Add(1)
				return errStressFault
			}
			return nil
		}))
	}
	ns := minibus.NewNamespace(opts...)
	defer ns.Close()
	ctx := context.Background()

	props := &minibus.QueueProperties{LockDuration: stressLock, MaxDeliveryCount: stressMaxDeliv,
		DefaultMessageTimeToLive: stressTTL, DeadLetteringOnMessageExpiration: true}
	q, err := ns.CreateQueue("work", props)
	require.NoError(t, err)
	top, err := ns.CreateTopic("events", nil)
	require.NoError(t, err)
	subProps := func(rule *minibus.RuleProperties) *minibus.SubscriptionProperties {
		return &minibus.SubscriptionProperties{LockDuration: stressLock, MaxDeliveryCount: stressMaxDeliv,
			DefaultMessageTimeToLive: stressTTL, DeadLetteringOnMessageExpiration: true, DefaultRule: rule}
	}
	all, err := top.CreateSubscription("all", subProps(nil))
	require.NoError(t, err)
	// "even" keeps even n (copy 0) and gives every message a second copy
	// marked by an action (R2).
	even, err := top.CreateSubscription("even", subProps(&minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "n % 2 = 0"}}))
	require.NoError(t, err)
	require.NoError(t, even.CreateRule("mark", &minibus.RuleProperties{Action: minibus.SQLAction{Expression: "SET copy = 'a'"}}))

	places := []stressPlace{
		{"work", q.NewReceiver},
		{"events/all", all.NewReceiver},
		{"events/even", even.NewReceiver},
	}
	ledger := &stressLedger{items: map[string]*stressItem{}, bySeq: map[string]string{}, deferred: map[string][]int64{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops struct {
		sent, received, completed, abandoned, deferred, fetched, deadLettered, dropped, radReceived, lockLost atomic.Int64
	}
	worker := func(name string, n uint64, f func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, n))
			for {
				select {
				case <-stop:
					return
				default:
				}
				f(rng)
			}
		}()
	}

	// Producers: batches to the queue and the topic, unique bodies.
	for p := range 3 {
		var i int
		worker("producer", uint64(100+p), func(rng *rand.Rand) {
			var msgs []*minibus.Message
			for range 1 + rng.IntN(3) {
				i++
				msgs = append(msgs, &minibus.Message{Body: []byte(fmt.Sprintf("p%d-%d", p, i)),
					ApplicationProperties: map[string]any{"n": i}})
			}
			toTopic := rng.IntN(2) == 0
			var err error
			if toTopic {
				err = top.SendMessages(ctx, msgs, nil)
			} else {
				err = q.SendMessages(ctx, msgs, nil)
			}
			if injected(err) {
				return // not accepted: a copy delivered is unexpected
			}
			if err != nil {
				ledger.mu.Lock()
				ledger.violate("send failed: %v", err)
				ledger.mu.Unlock()
				return
			}
			ops.sent.Add(int64(len(msgs)))
			ledger.mu.Lock()
			for _, m := range msgs {
				b := string(m.Body)
				if !toTopic {
					ledger.item("work|" + b + "|").accepted = true
					continue
				}
				ledger.item("events/all|" + b + "|").accepted = true
				ledger.item("events/even|" + b + "|a").accepted = true
				if m.ApplicationProperties["n"].(int)%2 == 0 {
					ledger.item("events/even|" + b + "|").accepted = true
				}
			}
			ledger.mu.Unlock()
		})
	}

	// record files a delivery: DeliveryCount, expiry, sequence number.
	record := func(place string, dlq bool, before time.Time, msgs []*minibus.ReceivedMessage) {
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		for _, m := range msgs {
			key := copyKey(place, m)
			it, ok := ledger.items[key]
			if !ok || !it.accepted {
				// Accepted is recorded after SendMessages returns: a fast
				// receiver may see the message first. Filed as seen; the
				// final check tells unexpected from early.
				it = ledger.item(key)
			}
			it.deliveries++
			it.counts[m.DeliveryCount]++
			if it.counts[m.DeliveryCount] > 1 {
				ledger.violate("%s delivered twice with DeliveryCount %d (I3)", key, m.DeliveryCount)
			}
			if !dlq && m.State == minibus.MessageStateActive && m.DeliveryCount > stressMaxDeliv {
				ledger.violate("%s delivered with DeliveryCount %d > MaxDeliveryCount (I6)", key, m.DeliveryCount)
			}
			// Deferred messages never expire (E7): only receives are bound.
			if !dlq && m.State == minibus.MessageStateActive && !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(before) {
				ledger.violate("%s delivered at or after %v, expired at %v (I7)", key, before, m.ExpiresAt)
			}
			if dlq {
				switch m.DeadLetterReason {
				case "MaxDeliveryCountExceeded", "TTLExpiredException", "stress":
				default:
					ledger.violate("%s dead-lettered with reason %q (I10)", key, m.DeadLetterReason)
				}
			}
			sk := fmt.Sprintf("%s#%d", strings.Split(place, "/")[0], m.SequenceNumber)
			if old, ok := ledger.bySeq[sk]; ok && old != string(m.Body) {
				ledger.violate("%s carries %q and %q (I5)", sk, old, m.Body)
			}
			ledger.bySeq[sk] = string(m.Body)
		}
	}
	terminal := func(place string, m *minibus.ReceivedMessage, how string) {
		ledger.mu.Lock()
		it := ledger.item(copyKey(place, m))
		it.terminals = append(it.terminals, how)
		ledger.mu.Unlock()
	}

	// settle applies a random settlement to a peek-lock delivery.
	settle := func(rng *rand.Rand, r *minibus.Receiver, place string, dlq bool, m *minibus.ReceivedMessage) (gone bool) {
		var err error
		switch x := rng.IntN(100); {
		case x < 55 || dlq && x < 80:
			if err = r.CompleteMessage(ctx, m, nil); err == nil {
				ops.completed.Add(1)
				how := "completed"
				if dlq {
					how = "completed from the dead-letter queue"
				}
				terminal(place, m, how)
				gone = true
			}
		case x < 67:
			if err = r.AbandonMessage(ctx, m, nil); err == nil {
				ops.abandoned.Add(1)
			}
		case x < 77 && !dlq:
			if err = r.DeferMessage(ctx, m, nil); err == nil {
				ops.deferred.Add(1)
				ledger.mu.Lock()
				ledger.deferred[place] = append(ledger.deferred[place], m.SequenceNumber)
				ledger.mu.Unlock()
				gone = true // filed again
			}
		case x < 82 && !dlq:
			if err = r.DeadLetterMessage(ctx, m, &minibus.DeadLetterOptions{Reason: "stress"}); err == nil {
				ops.deadLettered.Add(1)
				gone = true
			}
		default:
			ops.dropped.Add(1) // "crash": the lock expires
		}
		if errors.Is(err, minibus.ErrLockLost) {
			ops.lockLost.Add(1)
		} else if injected(err) {
			ops.dropped.Add(1) // nothing happened: the lock ends
		} else if err != nil {
			ledger.mu.Lock()
			ledger.violate("settling %s: %v", copyKey(place, m), err)
			ledger.mu.Unlock()
		}
		return gone
	}

	receiveOnce := func(rng *rand.Rand, r *minibus.Receiver, place string, rad, dlq bool) int {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		before := mock.Now()
		msgs, err := r.ReceiveMessages(rctx, 1+rng.IntN(4), nil)
		cancel()
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && !injected(err) {
				ledger.mu.Lock()
				ledger.violate("receive from %s: %v", place, err)
				ledger.mu.Unlock()
			}
			return 0
		}
		ops.received.Add(int64(len(msgs)))
		record(place, dlq, before, msgs)
		for _, m := range msgs {
			if rad {
				ops.radReceived.Add(1)
				terminal(place, m, "received-and-deleted")
				continue
			}
			settle(rng, r, place, dlq, m)
		}
		return len(msgs)
	}

	n := uint64(200)
	for _, pl := range places {
		for c := range 3 {
			rad := c == 2
			opts := &minibus.ReceiverOptions{}
			if rad {
				opts.ReceiveMode = minibus.ReceiveModeReceiveAndDelete
			}
			r, err := pl.recv(opts)
			require.NoError(t, err)
			n++
			worker("consumer", n, func(rng *rand.Rand) { receiveOnce(rng, r, pl.name, rad, false) })
		}
		dlr, err := pl.recv(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
		n++
		worker("dead-letter drainer", n, func(rng *rand.Rand) { receiveOnce(rng, dlr, pl.name, false, true) })
		fr, err := pl.recv(nil)
		require.NoError(t, err)
		n++
		worker("deferred fetcher", n, func(rng *rand.Rand) {
			ledger.mu.Lock()
			seqs := ledger.deferred[pl.name]
			var seq int64
			if len(seqs) > 0 {
				i := rng.IntN(len(seqs))
				seq = seqs[i]
				seqs[i] = seqs[len(seqs)-1]
				ledger.deferred[pl.name] = seqs[:len(seqs)-1]
			}
			ledger.mu.Unlock()
			if seq == 0 {
				time.Sleep(time.Millisecond)
				return
			}
			fetchDeferred(t, ctx, fr, pl.name, seq, func(msgs []*minibus.ReceivedMessage) {
				ops.fetched.Add(int64(len(msgs)))
				record(pl.name, false, mock.Now(), msgs)
				for _, m := range msgs {
					if !settle(rng, fr, pl.name, false, m) {
						// Back to Deferred when its lock ends (L6), or in
						// the dead-letter queue: file it again.
						ledger.mu.Lock()
						ledger.deferred[pl.name] = append(ledger.deferred[pl.name], m.SequenceNumber)
						ledger.mu.Unlock()
					}
				}
			}, ledger, true)
		})
	}

	// The one clock goroutine (benbjohnson/clock loses time under
	// concurrent Add).
	worker("clock", 1, func(rng *rand.Rand) {
		mock.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
	})

	time.Sleep(*stressDuration)
	close(stop)
	wg.Wait()
	faulting.Store(false)

	// Drain: let every lock and TTL run out, then take everything left.
	mock.Add(stressTTL + time.Hour)
	for _, pl := range places {
		r, err := pl.recv(nil)
		require.NoError(t, err)
		for receiveOnceAll(t, r, func(msgs []*minibus.ReceivedMessage) {
			record(pl.name, false, mock.Now(), msgs)
			for _, m := range msgs {
				require.NoError(t, r.CompleteMessage(ctx, m, nil))
				terminal(pl.name, m, "completed")
			}
		}) {
		}
		ledger.mu.Lock()
		seqs := ledger.deferred[pl.name]
		ledger.deferred[pl.name] = nil
		ledger.mu.Unlock()
		slices.Sort(seqs)
		for _, seq := range slices.Compact(seqs) {
			fetchDeferred(t, ctx, r, pl.name, seq, func(msgs []*minibus.ReceivedMessage) {
				record(pl.name, false, mock.Now(), msgs)
				for _, m := range msgs {
					require.NoError(t, r.CompleteMessage(ctx, m, nil))
					terminal(pl.name, m, "completed")
				}
			}, ledger, false)
		}
		dlr, err := pl.recv(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
		for receiveOnceAll(t, dlr, func(msgs []*minibus.ReceivedMessage) {
			record(pl.name, true, mock.Now(), msgs)
			for _, m := range msgs {
				require.NoError(t, dlr.CompleteMessage(ctx, m, nil))
				terminal(pl.name, m, "completed from the dead-letter queue")
			}
		}) {
		}
	}
	for _, pl := range places {
		for _, sq := range []minibus.SubQueue{minibus.SubQueueNone, minibus.SubQueueDeadLetter} {
			r, err := pl.recv(&minibus.ReceiverOptions{SubQueue: sq})
			require.NoError(t, err)
			left, err := r.PeekMessages(ctx, 1000, nil)
			require.NoError(t, err)
			for _, m := range left {
				t.Errorf("%s %v: left after the drain: %s seq %d state %v deliveries %d reason %q", pl.name, sq, m.Body, m.SequenceNumber, m.State, m.DeliveryCount, m.DeadLetterReason)
			}
		}
	}
	require.Zero(t, q.RuntimeProperties().TotalMessageCount, "queue not empty after the drain")
	require.Zero(t, all.RuntimeProperties().TotalMessageCount, "subscription all not empty after the drain")
	require.Zero(t, even.RuntimeProperties().TotalMessageCount, "subscription even not empty after the drain")

	// The verdict.
	var accepted, lost, duplicated, redelivered int
	byEnd := map[string]int{}
	keys := make([]string, 0, len(ledger.items))
	for k := range ledger.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		it := ledger.items[k]
		if !it.accepted {
			ledger.unexpected = append(ledger.unexpected, k)
			continue
		}
		accepted++
		switch len(it.terminals) {
		case 0:
			lost++
			ledger.violate("lost: %s (delivered %d times)", k, it.deliveries)
		case 1:
			byEnd[it.terminals[0]]++
		default:
			duplicated++
			ledger.violate("duplicated: %s ended %v", k, it.terminals)
		}
		if it.deliveries > 1 {
			redelivered++
		}
	}
	t.Logf("accepted %d (sent %d), lost %d, duplicated %d, unexpected %d, redelivered under peek-lock %d; ends %v",
		accepted, ops.sent.Load(), lost, duplicated, len(ledger.unexpected), redelivered, byEnd)
	t.Logf("received %d, completed %d, abandoned %d, deferred %d, fetched %d, dead-lettered %d, locks dropped %d, lock lost %d, received-and-deleted %d",
		ops.received.Load(), ops.completed.Load(), ops.abandoned.Load(), ops.deferred.Load(), ops.fetched.Load(),
		ops.deadLettered.Load(), ops.dropped.Load(), ops.lockLost.Load(), ops.radReceived.Load())
	for _, u := range ledger.unexpected {
		ledger.violate("unexpected: %s", u)
	}
	if len(ledger.violations) > 0 {
		if len(ledger.violations) > 20 {
			ledger.violations = append(ledger.violations[:20], "…")
		}
		t.Fatalf("seed %d: %d violations:\n%s", seed, len(ledger.violations), strings.Join(ledger.violations, "\n"))
	}
	require.Positive(t, ops.lockLost.Load()+ops.dropped.Load(), "no lock ever expired")
	require.Positive(t, ops.fetched.Load(), "no deferred message was fetched")
	if faults {
		t.Logf("faults injected %d", faultsInjected.Load())
		require.Positive(t, faultsInjected.Load())
	}
}

// fetchDeferred fetches one deferred message by sequence number. It may be
// locked right now (fetched before, its lock not yet ended: filed again),
// or gone (dead-lettered, L6, or its topic number shared by two copies of
// which one was fetched).
func fetchDeferred(t *testing.T, ctx context.Context, r *minibus.Receiver, place string, seq int64, got func([]*minibus.ReceivedMessage), l *stressLedger, again bool) {
	msgs, err := r.ReceiveDeferredMessages(ctx, []int64{seq}, nil)
	switch {
	case err == nil:
		got(msgs)
	case errors.Is(err, minibus.ErrMessageNotFound), errors.Is(err, errStressFault):
		if again {
			l.mu.Lock()
			l.deferred[place] = append(l.deferred[place], seq)
			l.mu.Unlock()
		}
	default:
		l.mu.Lock()
		l.violate("fetching deferred %s#%d: %v", place, seq, err)
		l.mu.Unlock()
	}
}

// receiveOnceAll receives what is available now and hands it to f; false
// when nothing was.
func receiveOnceAll(t *testing.T, r *minibus.Receiver, f func([]*minibus.ReceivedMessage)) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	msgs, err := r.ReceiveMessages(ctx, 100, nil)
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	require.NoError(t, err)
	f(msgs)
	return true
}
