package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/minibus-go/minibus/internal/store"
)

// ledger follows every message of a broker through its events, as an
// observer, and says where the broker lost, duplicated or invented one: an
// event its message's state does not allow (a delivery of a message
// delivered and not yet settled, released or lost, a settlement of one
// not delivered, an event of one completed, removed, cancelled or
// expired), a sequence number given twice (SEMANTICS Q1), a DeliveryCount
// that does not count the deliveries (I3), or, at the end (check), a
// message the store holds that the events do not, or one they do that the
// store has lost. Forwards are followed by id: no entity may take more
// messages of an id than were sent to it directly and forwarded to it.
//
// Events of one entity come in order, of different entities at once; a
// ledger is safe for that. topics names the topics, whose messages leave
// for their subscriptions as they are sent.
type ledger struct {
	mu       sync.Mutex
	topics   map[string]bool
	entities map[string]*ledgerEntity // by lower-case path
	forwards map[string]map[string]int
	direct   map[string]map[string]int // ids sent to an entity by the test
	taken    map[ledgerKey]int         // messages received and deleted
	faults   []string
	history  map[ledgerKey][]string // each message's events, for a fault
}

// ledgerEntity is what the ledger knows of one entity's messages, since
// its latest creation.
type ledgerEntity struct {
	msgs    map[int64]*ledgerSeq // by number
	top     int64                // the highest sequence number given
	arrived map[string]int       // messages that arrived, by id
	// sched holds the numbers of the scheduled messages: an activation
	// names the new number only, so it takes one of its id, and a
	// cancellation of a number an activation took takes another of that id
	// (the store's order among them is not the ledger's to know).
	sched     map[int64]string
	activated map[int64]bool
}

type ledgerKey struct {
	path string
	seq  int64
}

type ledgerState uint8

const (
	lIdle    ledgerState = iota // available, deferred or delayed in q
	lHeld                       // delivered: locked in q, or received and deleted
	lFlying                     // forwarded
	lExpired                    // expired: gone, unless dead-lettered next (SEMANTICS E5)
)

// ledgerSeq is what the ledger knows of the copies under one number: a
// subscription's rules with actions make several (R2), and an event does
// not say which copy it is of. So the ledger keeps every assignment of
// the events so far to copies that their states allow (worlds, each
// sorted, none twice); an event that no world allows is a fault.
type ledgerSeq struct {
	id     string
	worlds [][]ledgerMsg
}

type ledgerMsg struct {
	state ledgerState
	q     store.Queue
	// dc is the DeliveryCount the next delivery gives, or one more when
	// released by closing a session (SS5 takes the delivery back).
	dc      uint32
	dcMaybe bool
}

func (m ledgerMsg) String() string {
	return fmt.Sprintf("{state %d queue %d dc %d%s}", m.state, m.q, m.dc, map[bool]string{true: "?"}[m.dcMaybe])
}

// step moves each world by every copy that ok allows: mut gives the copy
// after the event, or false when the event took it out of the entity. It
// reports whether any world allowed the event.
func (s *ledgerSeq) step(ok func(m ledgerMsg) bool, mut func(m ledgerMsg) (ledgerMsg, bool)) bool {
	var next [][]ledgerMsg
	seen := map[string]bool{}
	for _, w := range s.worlds {
		for i, m := range w {
			if !ok(m) {
				continue
			}
			nw := slices.Clone(w)
			if after, kept := mut(m); kept {
				nw[i] = after
			} else {
				nw = slices.Delete(nw, i, i+1)
			}
			sortCopies(nw)
			if k := fmt.Sprint(nw); !seen[k] {
				seen[k] = true
				next = append(next, nw)
			}
		}
	}
	if len(next) == 0 {
		return false
	}
	s.worlds = next
	return true
}

// empty reports whether every world has no copy left.
func (s *ledgerSeq) empty() bool {
	for _, w := range s.worlds {
		if len(w) > 0 {
			return false
		}
	}
	return true
}

func sortCopies(w []ledgerMsg) {
	slices.SortFunc(w, func(a, b ledgerMsg) int {
		return cmp.Or(cmp.Compare(a.state, b.state), cmp.Compare(a.q, b.q), cmp.Compare(a.dc, b.dc),
			cmp.Compare(b2i(a.dcMaybe), b2i(b.dcMaybe)))
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newLedger(topics ...string) *ledger {
	l := &ledger{topics: map[string]bool{}, entities: map[string]*ledgerEntity{},
		forwards: map[string]map[string]int{}, direct: map[string]map[string]int{}, taken: map[ledgerKey]int{},
		history: map[ledgerKey][]string{}}
	for _, t := range topics {
		l.topics[t] = true
	}
	return l
}

func (l *ledger) fault(ev *Event, format string, args ...any) {
	k := ledgerKey{strings.ToLower(ev.Entity), ev.Seq}
	l.faults = append(l.faults, fmt.Sprintf("%v %s seq %d id %q at %d: ", ev.Kind, ev.Entity, ev.Seq, ev.MessageID, ev.At)+
		fmt.Sprintf(format, args...)+"; its events:\n\t"+strings.Join(l.history[k], "\n\t"))
}

func (l *ledger) entity(path string) *ledgerEntity {
	e := l.entities[path]
	if e == nil {
		e = &ledgerEntity{msgs: map[int64]*ledgerSeq{}, arrived: map[string]int{}, sched: map[int64]string{}, activated: map[int64]bool{}}
		l.entities[path] = e
	}
	return e
}

// sent notes ids the test sent to path directly, accepted.
func (l *ledger) sent(path string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.direct[path] == nil {
		l.direct[path] = map[string]int{}
	}
	for _, id := range ids {
		l.direct[path][id]++
	}
}

// took notes the messages a receive-and-delete receiver took from path.
func (l *ledger) took(path string, views []store.View) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range views {
		l.taken[ledgerKey{strings.ToLower(path), views[i].Key.Seq}]++
	}
}

// created notes the new message seq of e, in state st of queue q.
// A subscription's copies of one message share its number.
func (l *ledger) created(ev *Event, e *ledgerEntity, st ledgerState, q store.Queue) {
	if ev.Seq < e.top || (ev.Seq == e.top && !strings.Contains(strings.ToLower(ev.Entity), "/")) {
		l.fault(ev, "a sequence number not above %d, the highest given (Q1)", e.top)
	}
	e.top = max(e.top, ev.Seq)
	sq := e.msgs[ev.Seq]
	if sq == nil {
		sq = &ledgerSeq{id: ev.MessageID, worlds: [][]ledgerMsg{nil}}
		e.msgs[ev.Seq] = sq
	}
	for i, w := range sq.worlds {
		w = append(w, ledgerMsg{state: st, q: q, dc: ev.Deliveries + 1})
		sortCopies(w)
		sq.worlds[i] = w
	}
}

func (l *ledger) observe(ev *Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	path := strings.ToLower(ev.Entity)
	switch ev.Kind {
	case EventEntityCreated, EventEntityDeleted:
		delete(l.entities, path)
		for k := range l.history {
			if k.path == path {
				delete(l.history, k)
			}
		}
		return
	}
	e := l.entity(path)
	k := ledgerKey{path, ev.Seq}
	l.history[k] = append(l.history[k], fmt.Sprintf("%v queue %d dc %d at %d %s", ev.Kind, ev.Queue, ev.Deliveries, ev.At, ev.Reason))
	sq := e.msgs[ev.Seq]
	// apply moves the message's copies by the event (ledgerSeq.step), or
	// notes a fault.
	apply := func(what string, ok func(m ledgerMsg) bool, mut func(m ledgerMsg) (ledgerMsg, bool)) bool {
		if sq != nil && sq.step(ok, mut) {
			if sq.empty() {
				delete(e.msgs, ev.Seq)
			}
			return true
		}
		var worlds []string
		if sq != nil {
			for _, w := range sq.worlds {
				worlds = append(worlds, fmt.Sprint(w))
			}
		}
		l.fault(ev, "%s; its copies may be %v", what, worlds)
		return false
	}
	to := func(st ledgerState) func(m ledgerMsg) (ledgerMsg, bool) {
		return func(m ledgerMsg) (ledgerMsg, bool) { m.state = st; return m, true }
	}
	gone := func(ledgerMsg) (ledgerMsg, bool) { return ledgerMsg{}, false }
	idleIn := func(q store.Queue) func(m ledgerMsg) bool {
		return func(m ledgerMsg) bool { return m.state == lIdle && m.q == q }
	}
	held := func(m ledgerMsg) bool { return m.state == lHeld }
	// its narrows ok to the copies whose deliveries so far are the
	// event's count: a settlement and a lost lock are of a delivered copy,
	// and give its count.
	its := func(ok func(m ledgerMsg) bool) func(m ledgerMsg) bool {
		return func(m ledgerMsg) bool {
			return ok(m) && (m.dc == ev.Deliveries+1 || m.dcMaybe && m.dc == ev.Deliveries+2)
		}
	}
	switch ev.Kind {
	case EventSent:
		e.arrived[ev.MessageID]++
		if l.topics[path] {
			e.top = max(e.top, ev.Seq) // its copies are the subscriptions'
			return
		}
		l.created(ev, e, lIdle, store.Main)
	case EventScheduled:
		e.arrived[ev.MessageID]++
		if ev.Seq <= e.top {
			l.fault(ev, "a sequence number not above %d (Q1)", e.top)
		}
		e.top = max(e.top, ev.Seq)
		e.sched[ev.Seq] = ev.MessageID
	case EventActivated:
		took := int64(-1)
		for seq, id := range e.sched {
			if id == ev.MessageID && !e.activated[seq] && (took < 0 || seq < took) {
				took = seq
			}
		}
		if took < 0 {
			l.fault(ev, "no scheduled message of that id")
			return
		}
		e.activated[took] = true
		if l.topics[path] {
			e.top = max(e.top, ev.Seq)
			return
		}
		l.created(ev, e, lIdle, store.Main)
	case EventCanceled:
		id, ok := e.sched[ev.Seq]
		if !ok {
			l.fault(ev, "cancelled, never scheduled")
			return
		}
		delete(e.sched, ev.Seq)
		if e.activated[ev.Seq] { // an activation took this one: it took another
			delete(e.activated, ev.Seq)
			other := int64(-1)
			for seq, sid := range e.sched {
				if sid == id && !e.activated[seq] {
					other = seq
				}
			}
			if other < 0 {
				l.fault(ev, "cancelled, activated")
				return
			}
			e.activated[other] = true
		}
	case EventDelivered:
		apply("delivered from where it is not available", func(m ledgerMsg) bool {
			return m.state == lIdle && m.q == ev.Queue && (ev.Deliveries == m.dc || (m.dcMaybe && ev.Deliveries == m.dc-1))
		}, func(m ledgerMsg) (ledgerMsg, bool) {
			m.state, m.dc, m.dcMaybe = lHeld, ev.Deliveries+1, false
			return m, true
		})
	case EventCompleted:
		apply("completed, not delivered", its(held), gone)
	case EventAbandoned, EventDeferred:
		apply("settled, not delivered", its(held), to(lIdle))
	case EventReleased:
		// The delivery is taken back (SEMANTICS L15): the next gives the
		// same count again.
		apply("released, not delivered", its(held), func(m ledgerMsg) (ledgerMsg, bool) {
			m.state, m.dc, m.dcMaybe = lIdle, ev.Deliveries, false
			return m, true
		})
	case EventLockLost:
		apply("its lock lost, not delivered", its(held), func(m ledgerMsg) (ledgerMsg, bool) {
			m.state, m.dcMaybe = lIdle, true
			return m, true
		})
	case EventRemoved:
		apply("removed from where it is not", idleIn(ev.Queue), gone)
	case EventExpired:
		apply("expired, not available", idleIn(store.Main), to(lExpired))
	case EventForwarded:
		if apply("forwarded from where it is not", idleIn(ev.Queue), to(lFlying)) {
			to := strings.ToLower(ev.Reason)
			if l.forwards[to] == nil {
				l.forwards[to] = map[string]int{}
			}
			l.forwards[to][sq.id]++
		}
	case EventDeadLettered:
		switch ev.Reason {
		case ReasonTransferFailed:
			apply("back from a forward it did not make", func(m ledgerMsg) bool { return m.state == lFlying },
				func(m ledgerMsg) (ledgerMsg, bool) {
					m.state, m.q = lIdle, store.TransferQueue
					return m, true
				})
		case ReasonFilterEvaluation, ReasonSessionIDNull:
			// A copy that failed its rule (R5), or one of a subscription
			// that requires sessions sent without a SessionID (SS1): the
			// test's settlements give neither reason.
			l.created(ev, e, lIdle, store.DeadLetterQueue)
		default:
			// A settlement's, an expiry's, the end of the deliveries'
			// (after its abandon or lost lock) or a hop too many's.
			apply("dead-lettered from where it cannot be", func(m ledgerMsg) bool {
				return m.state == lHeld || m.state == lExpired || (m.state == lIdle && m.q == store.Main)
			}, func(m ledgerMsg) (ledgerMsg, bool) {
				m.state, m.q = lIdle, store.DeadLetterQueue
				return m, true
			})
		}
	}
}

// check fails t when l saw a fault, or when what b's entities hold is not
// what their events left in them.
func (l *ledger) check(t *testing.T, b *Broker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	faults := l.faults
	found := map[string]bool{}
	each := func(e *Entity) {
		path := strings.ToLower(e.Path())
		found[path] = true
		le := l.entity(path)
		held := map[int64][]ledgerPlace{}
		sched := map[string]int{}
		e.mu.Lock()
		e.st.Each(func(m *store.Message) {
			if m.State() == store.Scheduled {
				sched[m.ID()]++
				return
			}
			held[m.Key().Seq] = append(held[m.Key().Seq], ledgerPlace{m.State() == store.Locked, m.Queue()})
		})
		e.mu.Unlock()
		// Each number's copies must be where one of its worlds has them:
		// what a world has idle or delivered and the store not, it lost,
		// but for what a receiver took and deleted.
		seqs := map[int64]bool{}
		for seq := range held {
			seqs[seq] = true
		}
		for seq := range le.msgs {
			seqs[seq] = true
		}
		for seq := range seqs {
			worlds := [][]ledgerMsg{nil}
			if sq := le.msgs[seq]; sq != nil {
				worlds = sq.worlds
			}
			var first string
			for _, w := range worlds {
				if why := l.disagree(path, seq, held[seq], w); why == "" {
					first = ""
					break
				} else if first == "" {
					first = why
				}
			}
			if first != "" {
				id := ""
				if sq := le.msgs[seq]; sq != nil {
					id = sq.id
				}
				faults = append(faults, fmt.Sprintf("%s %d (id %q): %s", path, seq, id, first))
			}
		}
		want := map[string]int{}
		for seq, id := range le.sched {
			if !le.activated[seq] {
				want[id]++
			}
		}
		if fmt.Sprint(want) != fmt.Sprint(sched) {
			faults = append(faults, fmt.Sprintf("%s has scheduled %v, its events %v", path, sched, want))
		}
	}
	var all []*Entity
	b.mu.Lock()
	for _, e := range b.entities {
		if !e.deleted.Load() {
			all = append(all, e)
		}
	}
	b.mu.Unlock()
	for _, e := range all {
		each(e)
		for _, s := range e.subs {
			if !s.deleted.Load() {
				each(s)
			}
		}
	}
	for path, le := range l.entities {
		if !found[path] && len(le.msgs)+len(le.sched) > 0 {
			faults = append(faults, fmt.Sprintf("%s is gone, its events left %d messages in it", path, len(le.msgs)+len(le.sched)))
		}
		if strings.Contains(path, "/") {
			continue // subscriptions take only their topic's copies
		}
		for id, n := range le.arrived {
			if most := l.direct[path][id] + l.forwards[path][id]; n > most {
				faults = append(faults, fmt.Sprintf("%s took %d messages of id %q, sent %d and forwarded %d", path, n, id, l.direct[path][id], l.forwards[path][id]))
			}
		}
	}
	if len(faults) > 0 {
		sort.Strings(faults[len(l.faults):])
		if len(faults) > 30 {
			faults = faults[:30]
		}
		t.Fatalf("the events and the store disagree:\n%s", strings.Join(faults, "\n"))
	}
}

// ledgerPlace is where the store holds a copy of a message.
type ledgerPlace struct {
	locked bool
	q      store.Queue
}

// disagree says how the copies of number seq in world w differ from those
// the store at path holds, or "" when they agree.
func (l *ledger) disagree(path string, seq int64, places []ledgerPlace, w []ledgerMsg) string {
	copies := slices.Clone(w)
	for _, p := range places {
		i := slices.IndexFunc(copies, func(m ledgerMsg) bool {
			return (m.state == lIdle || m.state == lHeld) && m.q == p.q && (m.state == lHeld) == p.locked
		})
		if i < 0 {
			return fmt.Sprintf("the store holds a copy (locked %v, queue %d) that the events, %v, do not", p.locked, p.q, w)
		}
		copies = slices.Delete(copies, i, i+1)
	}
	taken := l.taken[ledgerKey{path, seq}]
	for _, m := range copies {
		switch {
		case m.state == lFlying || m.state == lExpired:
		case m.state == lHeld && taken > 0:
			taken--
		default:
			return fmt.Sprintf("lost %v of %v", m, w)
		}
	}
	return ""
}
