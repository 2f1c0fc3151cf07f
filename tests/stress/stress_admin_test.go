package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/minibustest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStressAdmin (T2, V2, L13, R5): administration beside traffic, under
// -race. Goroutines send, schedule and cancel, receive and settle in every
// way and use sessions, processors run on a queue that comes and goes and
// on a session queue, while one goroutine updates the entities (forwarding
// on and off, TTLs, idle deletion, status, lock duration, delivery count,
// dead-lettering on filter errors), adds and deletes rules (one that fails
// at evaluation for some messages), a subscription and a queue, and reads
// what they report, and one moves the mock clock. Every error must wrap a sentinel its call
// documents for what the others may be doing meanwhile. After the workers
// stop, each entity's counts (L13) must agree with what peeking it finds.
//
// It found four data races, each now a test of its own: a subscription
// read its topic's configuration without the topic's lock
// (TestA2_TopicUpdatesBesideSubscriptionPeeks,
// TestE1_F3_TopicUpdatesBesideTransferDeadLetters), a forward set a
// message's EnqueuedSequenceNumber while a peek read it
// (TestF2_UpdateStartsForwardingBesidePeeks), and a topic's copy of a
// message read its pins while a peek's reader unpinned it
// (TestCopyKeepsEveryField, internal/store).
func TestStressAdmin(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(minibustest.Epoch)
	var obs adminObserver
	ns := minibus.NewNamespace(minibus.WithClock(mock), minibus.WithObserver(obs.observe))
	defer func() { require.NoError(t, ns.Close()) }()
	stressAdmin(t, ns, mock)
	adminCounts(t, ns)
	obs.check(t)
}

// TestStressAdminDurable (T2, L13): the same in a durable namespace, whose
// journal and snapshots record the administration beside the traffic; the
// namespace opened again from its directory has the same entities, rules
// and counts.
func TestStressAdminDurable(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(minibustest.Epoch)
	dir := t.TempDir()
	var obs adminObserver
	ns, err := minibus.Open(dir, minibus.WithClock(mock), minibus.WithSync(minibus.SyncNone), minibus.WithObserver(obs.observe))
	require.NoError(t, err)
	stressAdmin(t, ns, mock)
	before := adminCounts(t, ns)
	require.NoError(t, ns.Close())
	obs.check(t)
	ns, err = minibus.Open(dir, minibus.WithClock(mock), minibus.WithSync(minibus.SyncNone))
	require.NoError(t, err)
	defer func() { require.NoError(t, ns.Close()) }()
	require.Equal(t, before, adminCounts(t, ns))
}

// adminObserver checks the events of TestStressAdmin as WithObserver
// promises them: one call at a time for one entity, and a queue's or
// topic's instants never go back (Q3), though a call beside it may have
// read the clock later and taken the entity's lock first. (A subscription's
// copies come at the instant of their topic's send, and a transfer dead
// letter at the instant its message left, which may be earlier than what
// the subscription or the source did meanwhile.)
type adminObserver struct {
	mu         sync.Mutex
	busy       map[string]bool
	lastAt     map[string]time.Time
	events     int
	violations []string
}

func (o *adminObserver) observe(ev minibus.Event) {
	o.mu.Lock()
	if o.busy == nil {
		o.busy, o.lastAt = map[string]bool{}, map[string]time.Time{}
	}
	if o.busy[ev.Entity] {
		o.violations = append(o.violations, fmt.Sprintf("%s: two events at once", ev.Entity))
	}
	o.busy[ev.Entity] = true
	if ev.Kind == minibus.EventEntityCreated {
		delete(o.lastAt, ev.Entity) // a name used again: a new history
	}
	if o.ordered(ev) {
		if ev.At.Before(o.lastAt[ev.Entity]) {
			o.violations = append(o.violations, fmt.Sprintf("%s: %v at %v after one at %v", ev.Entity, ev.Kind, ev.At, o.lastAt[ev.Entity]))
		}
		o.lastAt[ev.Entity] = ev.At
	}
	o.events++
	o.mu.Unlock()
	runtime.Gosched() // room for a second call of the entity, if one came
	o.mu.Lock()
	o.busy[ev.Entity] = false
	o.mu.Unlock()
}

// ordered reports whether ev is one whose instant follows its entity's
// earlier events.
func (o *adminObserver) ordered(ev minibus.Event) bool {
	return !strings.Contains(ev.Entity, "/Subscriptions/") &&
		!(ev.Kind == minibus.EventDeadLettered && ev.Reason == "TransferFailed")
}

func (o *adminObserver) check(t *testing.T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Positive(t, o.events)
	if len(o.violations) > 20 {
		o.violations = append(o.violations[:20], "…")
	}
	require.Empty(t, o.violations)
}

// stressAdmin runs the workers of TestStressAdmin on ns for
// -stress.duration, then leaves ns quiet: every entity active and not
// forwarding, every lock, TTL and scheduled time of the run passed.
func stressAdmin(t *testing.T, ns *minibus.Namespace, mock *clock.Mock) {
	ctx := context.Background()
	q1, err := ns.CreateQueue("q1", nil)
	require.NoError(t, err)
	_, err = ns.CreateQueue("q2", nil)
	require.NoError(t, err)
	sq, err := ns.CreateQueue("sq", &minibus.QueueProperties{RequiresSession: true})
	require.NoError(t, err)
	top, err := ns.CreateTopic("t", &minibus.TopicProperties{RequiresDuplicateDetection: true})
	require.NoError(t, err)
	s1, err := top.CreateSubscription("s1", nil)
	require.NoError(t, err)
	s2, err := top.CreateSubscription("s2", nil)
	require.NoError(t, err)

	// allowed fails the test unless err is nil or wraps one of want.
	allowed := func(op string, err error, want ...error) {
		if err == nil {
			return
		}
		for _, w := range want {
			if errors.Is(err, w) {
				return
			}
		}
		t.Errorf("%s: %v", op, err)
	}
	// Counted so that the test cannot pass having done nothing.
	var sent, received, handled, updated atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(f func(r *rand.Rand)) {
		seed := rand.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				f(r)
			}
		}()
	}
	// short bounds a call that may block: a receive on an empty entity.
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, time.Millisecond)
	}
	gone, off := minibus.ErrNotFound, minibus.ErrEntityDisabled

	worker(func(r *rand.Rand) {
		m := &minibus.Message{
			Body:                  []byte("x"),
			MessageID:             strconv.Itoa(r.IntN(20)), // duplicates in t (DD1)
			TimeToLive:            time.Duration(r.IntN(3)) * time.Minute,
			ApplicationProperties: map[string]any{"n": r.IntN(4), "amount": []any{r.IntN(4), "lots"}[r.IntN(2)]},
		}
		switch r.IntN(5) {
		case 0:
			err := q1.SendMessage(ctx, m, nil)
			allowed("send q1", err, off)
			if err == nil {
				sent.Add(1)
			}
		case 1:
			allowed("send t", top.SendMessage(ctx, m, nil), off, minibus.ErrQuotaExceeded)
		case 2:
			seqs, err := top.ScheduleMessages(ctx, []*minibus.Message{m}, mock.Now().Add(time.Duration(r.IntN(100))*time.Second), nil)
			allowed("schedule t", err, off, minibus.ErrQuotaExceeded)
			// A dropped duplicate's number is 0 (DD1); one activated
			// meanwhile is not found (S3).
			if err == nil && seqs[0] != 0 && r.IntN(2) == 0 {
				allowed("cancel t", top.CancelScheduledMessages(ctx, seqs, nil), off, minibus.ErrMessageNotFound)
			}
		case 3:
			m.SessionID = strconv.Itoa(r.IntN(3))
			allowed("send sq", sq.SendMessage(ctx, m, nil))
		case 4:
			if q2, err := ns.Queue("q2"); err == nil {
				allowed("send q2", q2.SendMessage(ctx, m, nil), gone, minibus.ErrQuotaExceeded)
			}
		}
	})
	for _, src := range []interface {
		NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
	}{q1, s1, s2} {
		worker(func(r *rand.Rand) {
			opts := &minibus.ReceiverOptions{}
			if r.IntN(4) == 0 {
				opts.SubQueue = minibus.SubQueueDeadLetter
			}
			rc, err := src.NewReceiver(opts)
			// A forwarding entity's main queue is not received from (F2).
			allowed("receiver", err, minibus.ErrInvalidArgument)
			if err != nil {
				return
			}
			defer func() { assert.NoError(t, rc.Close(ctx)) }() // a worker goroutine: no FailNow
			for range 20 {
				c, cancel := short()
				ms, err := rc.ReceiveMessages(c, 1+r.IntN(4), nil)
				cancel()
				allowed("receive", err, off, context.DeadlineExceeded)
				received.Add(int64(len(ms)))
				for _, m := range ms {
					switch r.IntN(5) {
					case 0:
						allowed("complete", rc.CompleteMessage(ctx, m, nil), minibus.ErrLockLost, off)
					case 1:
						allowed("abandon", rc.AbandonMessage(ctx, m, nil), minibus.ErrLockLost, off)
					case 2:
						if opts.SubQueue == minibus.SubQueueDeadLetter {
							continue // refused: already a dead letter (D1)
						}
						allowed("dead-letter", rc.DeadLetterMessage(ctx, m, nil), minibus.ErrLockLost, off)
					case 3:
						allowed("defer", rc.DeferMessage(ctx, m, nil), minibus.ErrLockLost, off)
						ds, err := rc.ReceiveDeferredMessages(ctx, []int64{m.SequenceNumber}, nil)
						allowed("deferred", err, minibus.ErrMessageNotFound, off)
						for _, d := range ds {
							allowed("complete deferred", rc.CompleteMessage(ctx, d, nil), minibus.ErrLockLost, off)
						}
					case 4:
						allowed("renew", rc.RenewMessageLock(ctx, m, nil), minibus.ErrLockLost, off)
					}
				}
				_, err = rc.PeekMessages(ctx, 2, nil)
				allowed("peek", err, off)
			}
		})
	}
	worker(func(r *rand.Rand) {
		c, cancel := short()
		defer cancel()
		sr, err := sq.AcceptNextSession(c, nil)
		allowed("accept", err, context.DeadlineExceeded, minibus.ErrSessionCannotBeLocked)
		if err != nil {
			return
		}
		lost := minibus.ErrSessionLockLost // the clock moves (SS5)
		ms, err := sr.ReceiveMessages(c, 2, nil)
		allowed("session receive", err, lost, context.DeadlineExceeded)
		for _, m := range ms {
			allowed("session complete", sr.CompleteMessage(ctx, m, nil), lost)
		}
		allowed("session state", sr.SetSessionState(ctx, []byte("s"), nil), lost)
		assert.NoError(t, sr.Close(ctx))
	})
	worker(func(r *rand.Rand) {
		idle := []time.Duration{0, 7 * 24 * time.Hour}[r.IntN(2)]
		ttl := []time.Duration{0, time.Minute, time.Hour}[r.IntN(3)]
		fwd := []string{"", "q2", "t"}[r.IntN(3)]
		status := minibus.EntityStatus(r.IntN(4))
		switch r.IntN(12) {
		case 0:
			_, err := ns.UpdateQueue("q1", minibus.QueueProperties{
				AutoDeleteOnIdle: idle, DefaultMessageTimeToLive: ttl, ForwardTo: fwd, ForwardDeadLetteredMessagesTo: fwd,
				LockDuration: 5 * time.Second, MaxDeliveryCount: int32(1 + r.IntN(3)), Status: status,
				DeadLetteringOnMessageExpiration: r.IntN(2) == 0,
			})
			allowed("update q1", err, gone) // q2 deleted (F1)
			if err == nil {
				updated.Add(1)
			}
		case 1:
			_, err := ns.UpdateTopic("t", minibus.TopicProperties{
				AutoDeleteOnIdle: idle, DefaultMessageTimeToLive: ttl, RequiresDuplicateDetection: true,
				Status: status, MaxSizeInMegabytes: int32(1 + r.IntN(2)),
			})
			allowed("update t", err)
		case 2:
			_, err := top.UpdateSubscription("s1", minibus.SubscriptionProperties{
				AutoDeleteOnIdle: idle, DefaultMessageTimeToLive: ttl, Status: status, MaxDeliveryCount: 2,
				DeadLetteringOnMessageExpiration: true, LockDuration: 5 * time.Second,
			})
			allowed("update s1", err)
		case 3:
			to := []string{"", "q1", "q2"}[r.IntN(3)]
			_, err := top.UpdateSubscription("s2", minibus.SubscriptionProperties{
				ForwardTo: to, ForwardDeadLetteredMessagesTo: to, DefaultMessageTimeToLive: ttl,
				DeadLetteringOnFilterEvaluationExceptions: r.IntN(2) == 0,
			})
			allowed("update s2", err, gone)
			// A rule that fails at evaluation when amount is text (R5).
			if r.IntN(2) == 0 {
				allowed("create rule", s2.CreateRule("bad", &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "amount > 1"}}), minibus.ErrAlreadyExists)
			} else {
				allowed("delete rule", s2.DeleteRule("bad"), gone)
			}
		case 4:
			allowed("create rule", s1.CreateRule("r", &minibus.RuleProperties{
				Filter: minibus.SQLFilter{Expression: "n = 1"}, Action: minibus.SQLAction{Expression: "SET m = 2"},
			}), minibus.ErrAlreadyExists)
		case 5:
			allowed("delete rule", s1.DeleteRule("r"), gone)
			allowed("delete rule", s1.DeleteRule("$Default"), gone)
			allowed("create rule", s1.CreateRule("$Default", &minibus.RuleProperties{
				Filter: minibus.CorrelationFilter{ApplicationProperties: map[string]any{"n": 2}},
			}), minibus.ErrAlreadyExists)
		case 6:
			_, err := top.CreateSubscription("s3", &minibus.SubscriptionProperties{AutoDeleteOnIdle: 5 * time.Minute, ForwardTo: fwd})
			allowed("create s3", err, minibus.ErrAlreadyExists, gone)
		case 7:
			allowed("delete s3", top.DeleteSubscription("s3"), gone)
		case 8:
			_ = q1.RuntimeProperties()
			_ = q1.Properties()
			_ = s1.Rules()
			_ = top.Subscriptions()
			_ = s1.RuntimeProperties()
			_ = top.RuntimeProperties()
			_ = ns.Queues()
		case 9:
			allowed("delete q2", ns.DeleteQueue("q2"), gone)
		case 10:
			_, err := ns.CreateQueue("q2", &minibus.QueueProperties{AutoDeleteOnIdle: 5 * time.Minute, MaxSizeInMegabytes: 1})
			allowed("create q2", err, minibus.ErrAlreadyExists)
		case 11:
			c, cancel := short()
			allowed("wait idle", ns.WaitIdle(c), context.DeadlineExceeded)
			cancel()
		}
	})
	// Processors beside the receivers: on q2, which is deleted and created
	// again, and on sq's sessions. Their handlers complete, fail (retried at
	// once), dead-letter or panic.
	runCtx, endRuns := context.WithCancel(ctx)
	handler := func(ctx context.Context, m *minibus.ReceivedMessage) error {
		handled.Add(1)
		switch rand.IntN(4) {
		case 1:
			return errors.New("failed")
		case 2:
			return &minibus.DeadLetterError{Reason: "handler"}
		case 3:
			panic("handler")
		}
		return nil
	}
	wg.Go(func() {
		for runCtx.Err() == nil {
			q2, err := ns.Queue("q2")
			if err != nil {
				runtime.Gosched() // until the admin worker creates it again
				continue
			}
			p, err := q2.NewProcessor(handler, &minibus.ProcessorOptions{MaxConcurrentCalls: 3})
			allowed("processor q2", err, gone)
			if err == nil {
				allowed("run q2", p.Run(runCtx), gone)
			}
		}
	})
	wg.Go(func() {
		p, err := sq.NewSessionProcessor(handler, &minibus.SessionProcessorOptions{MaxConcurrentSessions: 2})
		if assert.NoError(t, err) {
			assert.NoError(t, p.Run(runCtx))
		}
	})
	// The one clock goroutine (benbjohnson/clock loses time under
	// concurrent Add).
	worker(func(r *rand.Rand) { mock.Add(time.Duration(r.Int64N(int64(2 * time.Second)))) })

	time.Sleep(*stressDuration)
	close(stop)
	endRuns()
	wg.Wait()
	t.Logf("sent to q1 %d, received %d, handled %d, q1 updated %d times", sent.Load(), received.Load(), handled.Load(), updated.Load())
	require.Positive(t, sent.Load())
	require.Positive(t, received.Load())
	require.Positive(t, handled.Load())
	require.Positive(t, updated.Load())

	_, err = ns.UpdateQueue("q1", minibus.QueueProperties{})
	require.NoError(t, err)
	_, err = ns.UpdateTopic("t", minibus.TopicProperties{RequiresDuplicateDetection: true})
	require.NoError(t, err)
	for _, name := range []string{"s1", "s2"} {
		_, err = top.UpdateSubscription(name, minibus.SubscriptionProperties{})
		require.NoError(t, err)
	}
	mock.Add(10 * time.Minute)
}

// adminCounts checks that each entity's counts agree with what a peek finds
// in every sub-queue (L13) and returns them, with the entities and rules,
// by name.
func adminCounts(t *testing.T, ns *minibus.Namespace) map[string]any {
	ctx := context.Background()
	// A dead-letter queue's messages may be deferred too (D1): allStates
	// counts them all.
	const allStates = minibus.MessageState(-1)
	peekCounts := func(src interface {
		NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
	}, sub minibus.SubQueue) map[minibus.MessageState]int64 {
		r, err := src.NewReceiver(&minibus.ReceiverOptions{SubQueue: sub})
		require.NoError(t, err)
		defer func() { require.NoError(t, r.Close(ctx)) }()
		n := map[minibus.MessageState]int64{}
		for {
			ms, err := r.PeekMessages(ctx, 100, nil)
			require.NoError(t, err)
			if len(ms) == 0 {
				return n
			}
			for _, m := range ms {
				n[m.State]++
				n[allStates]++
			}
		}
	}
	got := map[string]any{"queues": ns.Queues(), "topics": ns.Topics()}
	q1, err := ns.Queue("q1")
	require.NoError(t, err)
	main := peekCounts(q1, minibus.SubQueueNone)
	rp := q1.RuntimeProperties()
	require.Equal(t, main[minibus.MessageStateActive]+main[minibus.MessageStateDeferred], rp.ActiveMessageCount, "q1 active")
	require.Equal(t, main[minibus.MessageStateScheduled], rp.ScheduledMessageCount, "q1 scheduled")
	require.Equal(t, peekCounts(q1, minibus.SubQueueDeadLetter)[allStates], rp.DeadLetterMessageCount, "q1 dead letters")
	require.Equal(t, peekCounts(q1, minibus.SubQueueTransfer)[allStates], rp.TransferDeadLetterMessageCount, "q1 transfer dead letters")
	got["q1"] = [...]int64{rp.ActiveMessageCount, rp.ScheduledMessageCount, rp.DeadLetterMessageCount, rp.TransferDeadLetterMessageCount, rp.SizeInBytes}
	sq, err := ns.Queue("sq")
	require.NoError(t, err)
	srp := sq.RuntimeProperties()
	got["sq"] = [...]int64{srp.ActiveMessageCount, srp.DeadLetterMessageCount, srp.SizeInBytes}
	top, err := ns.Topic("t")
	require.NoError(t, err)
	got["t"] = top.Subscriptions()
	got["t scheduled"] = top.RuntimeProperties().ScheduledMessageCount
	for _, name := range []string{"s1", "s2"} {
		s, err := top.Subscription(name)
		require.NoError(t, err)
		main := peekCounts(s, minibus.SubQueueNone)
		rp := s.RuntimeProperties()
		require.Equal(t, main[minibus.MessageStateActive]+main[minibus.MessageStateDeferred], rp.ActiveMessageCount, "%s active", name)
		require.Equal(t, peekCounts(s, minibus.SubQueueDeadLetter)[allStates], rp.DeadLetterMessageCount, "%s dead letters", name)
		require.Equal(t, peekCounts(s, minibus.SubQueueTransfer)[allStates], rp.TransferDeadLetterMessageCount, "%s transfer dead letters", name)
		got[name] = [...]int64{rp.ActiveMessageCount, rp.DeadLetterMessageCount, rp.TransferDeadLetterMessageCount}
		got[name+" rules"] = s.Rules()
	}
	return got
}
