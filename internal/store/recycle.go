package store

import (
	"sync"
	"sync/atomic"
)

// Messages and their body buffers are recycled: a broker that moves a
// million messages a second would otherwise spend much of its time
// allocating, zeroing and collecting 1 KiB bodies, and every new body would
// be cold memory.
//
// The rule that makes it safe: a Message is recycled only once nothing can
// reach it. Its store has let go of it (it is in no arena and no index), and
// no view is still reading it: a view pins the message under the
// entity's lock and unpins it when its reader is done. A body that a topic's
// copies share is reused once the message they were copied from and every
// copy have been recycled: they count themselves (share), and the last to
// go keeps the room. One that is never recycled (left to the collector
// while a view read it, say) keeps the room from reuse: safe, only
// slower.
//
// The room of a recycled body goes to the next send's copy in, or, when a
// receive drains a backlog that nothing sends to (View.Drain), to the
// copy out (TakeRoom): the reader then owns it. Sends want it more: a send
// that finds no room allocates its body alone, where a receive allocates
// the bodies of its batch together.

// maxPooledBody is the largest body buffer kept for reuse.
const maxPooledBody = 64 << 10

// pool holds recycled Messages with body room, past the reserve's
// (reserve.go); bare those that TakeRoom is not to draw again: without room
// (it took it, or they had none of their own), or with room that did not
// fit a copy out. NewMessage draws on bare once pool and the reserve are
// empty.
var pool, bare sync.Pool

// bareOrNew returns a recycled Message from bare, or a new one.
func bareOrNew() *Message {
	if m, ok := bare.Get().(*Message); ok {
		return m
	}
	return new(Message)
}

// NewMessage returns a Message in no store, its fields zero but Scheduled
// (Unset) and Expires (Never), possibly with spare Body capacity (Body has
// length 0, and is nil when there is no spare room).
func NewMessage() *Message {
	m := withRoom()
	if m == nil {
		m = bareOrNew()
	}
	m.Scheduled = Unset
	m.Expires = Never
	m.due = Never
	return m
}

// share counts the messages that share one body: a topic's message and
// its copies.
type share struct{ holders atomic.Int32 }

// recycle gives m back for reuse if nothing can reach it: it must have left
// its store and no view may be reading it. Its body's room is kept
// unless other messages still share it, or there is none, or it is huge.
func recycle(m *Message) {
	if m.slot != 0 || atomic.LoadInt32(&m.pins) != 0 {
		return
	}
	body := m.Body[:0]
	if m.share != nil && m.share.holders.Add(-1) != 0 {
		body = nil
	}
	if cap(body) == 0 || cap(body) > maxPooledBody {
		body = nil
	}
	*m = Message{Body: body}
	if body == nil {
		bare.Put(m)
	} else {
		keep(m)
	}
}

// Copy returns a copy of m for a topic's subscription, in no store, sharing
// m's body and properties: the body's room is reused once m and all its
// copies have been recycled. It is called under the topic's lock; a
// message forwarded to the topic after it was stored elsewhere may still
// be pinned by a reader there, who unpins it without that lock, so the
// copy names every field but pins (and the store's links, not copied)
// instead of copying m whole; TestCopyKeepsEveryField counts them.
func (m *Message) Copy() *Message {
	if m.share == nil {
		m.share = new(share)
		m.share.holders.Store(1) // m itself
	}
	m.share.holders.Add(1)
	c := bareOrNew() // the room of one from pool would go unused
	*c = Message{
		MessageID: m.MessageID, IDSeed: m.IDSeed, SessionID: m.SessionID, Headers: m.Headers,
		Body: m.Body, Props: m.Props, Scheduled: m.Scheduled,
		TTL: m.TTL, Enqueued: m.Enqueued, Expires: m.Expires, Deliveries: m.Deliveries, Hops: m.Hops,
		FromDeferral: m.FromDeferral, EnqueuedSeq: m.EnqueuedSeq, DL: m.DL, RenewUntil: m.RenewUntil,
		key: m.key, state: m.state, queue: m.queue, lockedUntil: m.lockedUntil, token: m.token,
		due: Never, size: m.size, share: m.share, madeID: m.madeID,
	}
	return c
}

// View is what a reader copies out of a stored message under its
// entity's lock: every field that can change while the message is stored
// or after it leaves (EnqueuedSeq, which a forward sets), and the message
// itself, pinned, for the fields that cannot (MessageID, IDSeed, SessionID,
// Headers, Body, Scheduled), which the reader may then read without the
// lock. Release it when done.
type View struct {
	M           *Message
	Key         Key
	Enqueued    int64
	Expires     int64
	TTL         int64
	Props       map[string]any
	DL          *DeadLetter
	LockedUntil int64
	Token       [16]byte
	Deliveries  uint32
	EnqueuedSeq int64
	// MadeID is the broker-made id when ID has made it already (it is made
	// once, under the lock); empty otherwise.
	MadeID string
	// State is the state the reader is shown (SEMANTICS L14), which the
	// caller chose.
	State State
	// Drain is set on what a receive took from a backlog that nothing had
	// been sent to for a while (the engine decides how long): the reader's
	// copy of the body may take the room of a recycled one (TakeRoom), as
	// no send is waiting for it.
	Drain bool
	// owned is set when the view's reader owns the message, which has
	// left its store: Release recycles it.
	owned bool
}

// View pins m and copies what can change. shown is the state to show;
// owned says that m has left its store for good and the reader owns it (a
// receive-and-delete).
func (m *Message) View(shown State, owned bool) View {
	atomic.AddInt32(&m.pins, 1)
	return View{
		M: m, Key: m.key, Enqueued: m.Enqueued, Expires: m.Expires, TTL: m.TTL,
		Props: m.Props, DL: m.DL, LockedUntil: m.lockedUntil, Token: m.token,
		Deliveries: m.Deliveries, EnqueuedSeq: m.EnqueuedSeq, MadeID: m.madeID, State: shown, owned: owned,
	}
}

// Release ends the view: it unpins the message, and recycles it when
// the reader owned it. It may be called without the entity's lock.
func (s *View) Release() {
	m := s.M
	s.M = nil
	atomic.AddInt32(&m.pins, -1)
	if s.owned {
		recycle(m)
	}
}

// Recycle gives m back for reuse once nothing can reach it (a stored
// message stays): a message a replayed log had on its way and then dropped,
// or a topic's message once its copies are made, which no longer shares
// their body.
func Recycle(m *Message) { recycle(m) }

// TakeRoom returns the room of a recycled body for a copy of n bytes, its
// length 0, or nil when the recycled message it draws has none that fits:
// room for fewer bytes, or for more than twice as many, which the copy would
// keep from the collector. The caller owns the room.
func TakeRoom(n int) []byte {
	m := withRoom()
	if m == nil {
		return nil
	}
	room := m.Body
	if cap(room) < n || cap(room) > 2*n {
		room = nil // m keeps it, for a send
	} else {
		m.Body = nil
	}
	bare.Put(m)
	return room
}
