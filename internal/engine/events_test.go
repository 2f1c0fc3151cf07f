package engine

import (
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// White tests of the events' lanes and batches (events.go): events pushed
// straight into lanes, as transitions push them, and delivered as calls
// deliver them.

// eventLog is an observer that records what it sees; hook, when set, runs
// first on each event.
type eventLog struct {
	mu   sync.Mutex
	seen []string
	hook func(x *Event)
}

func (o *eventLog) observe(x *Event) {
	if o.hook != nil {
		o.hook(x)
	}
	o.mu.Lock()
	o.seen = append(o.seen, x.Entity+"#"+strconv.FormatInt(x.Seq, 10))
	o.mu.Unlock()
}

func (o *eventLog) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.seen
	o.seen = nil
	return out
}

// eventBroker is a broker whose observer is o.
func eventBroker(t *testing.T, o *eventLog) *Broker {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler), Observer: o.observe})
	t.Cleanup(func() { b.Close() })
	return b
}

// pushTo pushes the event path#seq, as its entity would under its lock.
func pushTo(b *Broker, path string, seq int64) {
	b.events.push(b.events.laneOf(path), EventSent, 0, path, store.Main, seq, "", 0, "")
}

// requireQuiet checks, once the batches that are over are finished, that
// every event has been finished and that no lane is ready or busy.
func requireQuiet(t *testing.T, b *Broker) {
	t.Helper()
	ev := &b.events
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for i := len(ev.busy) - 1; i >= 0; i-- {
		if l := ev.all[ev.busy[i]]; l.at.Load() == l.mid {
			ev.finishLocked(l)
		}
	}
	require.Zero(t, ev.open, "open events")
	require.Empty(t, ev.ready, "ready lanes")
	require.Empty(t, ev.busy, "busy lanes")
}

// One goroutine's events, over many lanes, reach the observer in the order
// they were pushed: a batch stops before the next ready lane's first event.
func TestEventsTicketOrderAcrossLanes(t *testing.T) {
	o := &eventLog{}
	b := eventBroker(t, o)
	rng := rand.New(rand.NewPCG(1, 2))
	var want []string
	seqs := map[string]int64{}
	for round := range 20 {
		since := b.events.mark()
		for range 1 + rng.IntN(200) {
			path := "q" + strconv.Itoa(rng.IntN(1+round*10))
			seqs[path]++
			pushTo(b, path, seqs[path])
			want = append(want, path+"#"+strconv.FormatInt(seqs[path], 10))
		}
		b.deliverEvents(since)
		require.Equal(t, want, o.take(), "round %d", round)
		want = nil
		requireQuiet(t, b)
	}
}

// A lane's ring grows while its batch is being observed: the events pushed
// meanwhile wait after the batch, and a call that pushed them waits until
// they have been observed, in order, after the batch.
func TestEventsLaneGrowsWhileBusy(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	o := &eventLog{}
	o.hook = func(x *Event) {
		if x.Seq == 1 {
			close(entered)
			<-release
		}
	}
	b := eventBroker(t, o)
	var wg sync.WaitGroup
	since := b.events.mark()
	pushTo(b, "q", 1)
	wg.Go(func() { b.deliverEvents(since) })
	<-entered
	since = b.events.mark()
	for seq := int64(2); seq <= 100; seq++ {
		pushTo(b, "q", seq)
	}
	wg.Go(func() {
		b.deliverEvents(since) // waits for the first batch, then takes the rest
		o.mu.Lock()
		defer o.mu.Unlock()
		if len(o.seen) != 100 {
			t.Errorf("deliverEvents returned with %d events of 100 observed", len(o.seen))
		}
	})
	close(release)
	wg.Wait()
	var want []string
	for seq := 1; seq <= 100; seq++ {
		want = append(want, "q#"+strconv.Itoa(seq))
	}
	require.Equal(t, want, o.take())
	requireQuiet(t, b)
}

// When the observer panics on an event of a batch, the panic reaches the
// call; the event counts as observed, and those after it wait again, for
// the next delivery, in order.
func TestEventsObserverPanicsInBatch(t *testing.T) {
	o := &eventLog{}
	o.hook = func(x *Event) {
		if x.Seq == 2 {
			panic("observer failed")
		}
	}
	b := eventBroker(t, o)
	since := b.events.mark()
	for seq := int64(1); seq <= 4; seq++ {
		pushTo(b, "q", seq)
	}
	require.PanicsWithValue(t, "observer failed", func() { b.deliverEvents(since) })
	require.Equal(t, []string{"q#1"}, o.take(), "the batch stopped at the panic")
	o.hook = nil
	b.deliverEvents(since)
	require.Equal(t, []string{"q#3", "q#4"}, o.take())
	requireQuiet(t, b)
	pushTo(b, "q", 5) // the lane works on
	b.deliverEvents(0)
	require.Equal(t, []string{"q#5"}, o.take())
	requireQuiet(t, b)
}

// An observer blocked on one entity's event holds up neither another
// goroutine's call on another entity, nor one whose events all came before
// (the event being observed is handed over); a call with a later event of
// the same entity waits for it.
func TestEventsBlockedObserver(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var released bool // written before release is closed
	o := &eventLog{}
	o.hook = func(x *Event) {
		if x.Entity == "a" && x.Seq == 1 {
			close(entered)
			<-release
		}
	}
	b := eventBroker(t, o)
	var wg sync.WaitGroup
	pushTo(b, "a", 1)
	wg.Go(func() { b.deliverEvents(0) })
	<-entered

	since := b.events.mark()
	pushTo(b, "b", 1)
	b.deliverEvents(since) // b#1 is this call's: observed, a#1 not waited for
	require.Equal(t, []string{"b#1"}, o.take())
	b.deliverEvents(since) // a#1 came before and is being observed

	since = b.events.mark()
	pushTo(b, "a", 2)
	wg.Go(func() {
		b.deliverEvents(since)
		if !released {
			t.Error("a call returned before its event, queued after a blocked one of its entity, was observed")
		}
	})
	released = true
	close(release)
	wg.Wait()
	require.Equal(t, []string{"a#1", "a#2"}, o.take())
	requireQuiet(t, b)
}

// Many goroutines push to their own lanes and to shared ones, and deliver:
// each lane's events are observed in order, and each goroutine's call
// returns only once its own events have been observed.
func TestEventsConcurrentLanes(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int64{} // path: the last seq observed
	o := &eventLog{}
	o.hook = func(x *Event) {
		mu.Lock()
		defer mu.Unlock()
		if x.Seq != seen[x.Entity]+1 {
			t.Errorf("%s#%d observed after #%d", x.Entity, x.Seq, seen[x.Entity])
		}
		seen[x.Entity] = x.Seq
	}
	b := eventBroker(t, o)
	var seqMu [3]sync.Mutex // the shared entities' locks
	var sharedSeq [3]int64
	var wg sync.WaitGroup
	for g := range 6 {
		own := "own" + strconv.Itoa(g)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var n int64
			for range 300 {
				since := b.events.mark()
				var mine []string
				for range 1 + rng.IntN(4) {
					if s := rng.IntN(4); s < 3 {
						path := "shared" + strconv.Itoa(s)
						seqMu[s].Lock()
						sharedSeq[s]++
						pushTo(b, path, sharedSeq[s])
						mine = append(mine, path+"#"+strconv.FormatInt(sharedSeq[s], 10))
						seqMu[s].Unlock()
					} else {
						n++
						pushTo(b, own, n)
						mine = append(mine, own+"#"+strconv.FormatInt(n, 10))
					}
				}
				b.deliverEvents(since)
				mu.Lock()
				for _, e := range mine {
					i := strings.LastIndexByte(e, '#')
					if seq, _ := strconv.ParseInt(e[i+1:], 10, 64); seen[e[:i]] < seq {
						t.Errorf("deliverEvents returned before %s was observed", e)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.deliverEvents(0)
	requireQuiet(t, b)
}

// Lanes whose last batch is over do not pile up as busy, however many
// entities had one event and fell quiet, and a deleted entity's lane, with
// its ring, goes once its events have been observed.
func TestEventsQuietLanesDoNotPileUp(t *testing.T) {
	o := &eventLog{}
	b := eventBroker(t, o)
	for i := range 1000 {
		since := b.events.mark()
		pushTo(b, "q"+strconv.Itoa(i), 1)
		b.deliverEvents(since)
	}
	require.Len(t, o.take(), 1000)
	ev := &b.events
	ev.mu.Lock()
	busy := len(ev.busy)
	ev.mu.Unlock()
	require.LessOrEqual(t, busy, maxLingering+1)

	q, err := b.Create(KindQueue, "gone", Config{MaxSizeMB: 1, MaxMessageKB: 64})
	require.NoError(t, err)
	require.NoError(t, b.Delete(KindQueue, "gone"))
	ev.mu.Lock()
	defer ev.mu.Unlock()
	require.False(t, q.lane.busy)
	require.Nil(t, q.lane.q, "the deleted entity's ring")
	require.NotContains(t, ev.lanes, "gone")
	require.Contains(t, ev.free, q.lane.id)
}

// liveLanes counts the lanes in use: made and not released.
func liveLanes(b *Broker) (live, paths int) {
	ev := &b.events
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return len(ev.all) - len(ev.free), len(ev.lanes)
}

// kindLog is an observer that records each event as path:kind.
type kindLog struct {
	mu   sync.Mutex
	seen []string
}

func (o *kindLog) observe(x *Event) {
	o.mu.Lock()
	o.seen = append(o.seen, x.Entity+":"+x.Kind.String())
	o.mu.Unlock()
}

// The lane of a deleted entity is released once its events are observed:
// queues deleted explicitly or on idle (SEMANTICS A3), topics with their
// subscriptions (A5), subscriptions alone. A namespace that makes and
// deletes entities without end keeps as many lanes as it has entities, and
// its observer sees every event of theirs, in order per path.
func TestEventsLanesOfDeletedEntitiesAreReleased(t *testing.T) {
	o := &kindLog{}
	mock := clock.NewMock()
	mock.Set(epoch)
	b := New(Options{Clock: mock, Logger: slog.New(slog.DiscardHandler), Observer: o.observe})
	defer b.Close()
	c := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, MaxSizeMB: 1, MaxMessageKB: 64}
	idle := c
	idle.AutoDeleteOnIdle = 5 * time.Minute
	rule, err := CompileRule(RuleSpec{Name: "$Default", Filter: FilterTrue})
	require.NoError(t, err)
	keep, err := b.Create(KindTopic, "keep", c) // its lane stays
	require.NoError(t, err)
	live0, paths0 := liveLanes(b)

	const n, idleRound = 10_000, 200
	o.mu.Lock()
	want := len(o.seen) // events
	o.mu.Unlock()
	for i := range n {
		name := "tmp" + strconv.Itoa(i)
		switch i % 4 {
		case 0: // a queue, deleted
			_, err := b.Create(KindQueue, name, c)
			require.NoError(t, err)
			require.NoError(t, b.Delete(KindQueue, name))
			want += 2
		case 1: // a queue, deleted on idle, with the others of its round
			_, err := b.Create(KindQueue, name, idle)
			require.NoError(t, err)
			want += 2
		case 2: // a topic and its subscriptions, deleted together
			top, err := b.Create(KindTopic, name, c)
			require.NoError(t, err)
			for _, sub := range []string{"a", "b"} {
				_, err := top.CreateSubscription(sub, c, []*Rule{rule})
				require.NoError(t, err)
			}
			require.NoError(t, b.Delete(KindTopic, name))
			want += 6
		case 3: // a subscription, deleted; then a queue, under a name used before
			_, err := keep.CreateSubscription(name, c, []*Rule{rule})
			require.NoError(t, err)
			require.NoError(t, keep.DeleteSubscription(name))
			_, err = b.Create(KindQueue, "again", c)
			require.NoError(t, err)
			require.NoError(t, b.Delete(KindQueue, "again"))
			want += 4
		}
		if i%idleRound == idleRound-1 {
			mock.Add(5 * time.Minute) // a mock's Add sleeps a millisecond
			b.CatchUp()
		}
	}
	b.deliverEvents(0)
	live, paths := liveLanes(b)
	require.Equal(t, live0, live, "lanes in use")
	require.Equal(t, paths0, paths, "paths with a lane")
	b.events.mu.Lock()
	made := len(b.events.all)
	b.events.mu.Unlock()
	require.LessOrEqual(t, made, live0+idleRound/4+3, "lanes made: a round's idle queues and a topic with two subscriptions at most at once")

	// Every event observed, each entity's created before deleted.
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Equal(t, want, len(o.seen), "events observed")
	last := map[string]string{}
	for _, s := range o.seen {
		path, kind, _ := strings.Cut(s, ":")
		switch kind {
		case "EntityCreated":
			require.NotEqual(t, "EntityCreated", last[path], "%s created twice", path)
		case "EntityDeleted":
			require.Equal(t, "EntityCreated", last[path], "%s deleted before created", path)
		}
		last[path] = kind
	}
}

// An entity made at the path of a deleted one whose events are not all
// observed takes its lane, after them, and the lane is not released while
// it lives.
func TestEventsLaneOfDeletedEntityTakenAgain(t *testing.T) {
	o := &eventLog{}
	b := eventBroker(t, o)
	ev := &b.events
	push := func(l *lane, kind EventKind, seq int64) {
		ev.push(l, kind, 0, "x", store.Main, seq, "", 0, "")
	}
	l := ev.laneOf("x")
	push(l, EventEntityCreated, 1)
	push(l, EventEntityDeleted, 2)
	require.Same(t, l, ev.laneOf("X"), "the waiting events of the deleted entity come first")
	push(l, EventEntityCreated, 3)
	b.deliverEvents(0)
	require.Equal(t, []string{"x#1", "x#2", "x#3"}, o.take())
	requireQuiet(t, b)
	ev.mu.Lock()
	require.Same(t, l, ev.lanes["x"], "kept while its entity lives")
	ev.mu.Unlock()

	push(l, EventEntityDeleted, 4)
	b.deliverEvents(0)
	require.Equal(t, []string{"x#4"}, o.take())
	ev.mu.Lock()
	require.NotContains(t, ev.lanes, "x")
	require.Equal(t, []int32{l.id}, ev.free)
	ev.mu.Unlock()
	require.Same(t, l, ev.laneOf("y"), "released, it serves another path")
	live, paths := liveLanes(b)
	require.Equal(t, 2, live, "the shared lane and y's")
	require.Equal(t, 1, paths)
}
