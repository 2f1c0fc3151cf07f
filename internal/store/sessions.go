package store

import "github.com/google/btree"

// A session-enabled entity's main queue keeps its available and deferred
// messages per session, each session in a stream of its own, so that a
// session receiver takes its session's first message without walking past
// the others' (SEMANTICS SS4). Scheduled messages stay in the main stream
// until they activate; locked ones are in the list of locks, as always.
//
// A session is held while a receiver has accepted it (Hold). The ready
// index orders the sessions that are not held and have an available
// message by their first available message: what AcceptNextSession takes
// is its minimum (SS3). A session's stream exists while it has messages or
// is held.
type sessions struct {
	byID  map[string]*session
	ready *btree.BTreeG[readyItem]
}

type session struct {
	id     string
	trees  stream // its available, deferred and delayed messages; counts unused
	held   bool
	locked int // its locked messages
	// first is its key in the ready index, when inReady.
	first   Key
	inReady bool
}

type readyItem struct {
	first Key
	s     *session
}

func lessReady(a, b readyItem) bool { return a.first.Less(b.first) }

func newSessions() *sessions {
	return &sessions{byID: make(map[string]*session), ready: btree.NewG(degree, lessReady)}
}

// get returns the session id, making it if it is new.
func (ss *sessions) get(id string) *session {
	x := ss.byID[id]
	if x == nil {
		x = &session{id: id, trees: newStream()}
		ss.byID[id] = x
	}
	return x
}

// changed brings the session of m, a message of the main queue, up to date
// after m entered or left its trees or its lock. Nothing for stores without
// sessions.
func (ss *sessions) changed(s *Store, m *Message) {
	if ss == nil || m.queue != Main {
		return
	}
	if x := ss.byID[m.SessionID]; x != nil {
		ss.refresh(x)
	}
}

// locked counts a lock of m taken (d = 1) or ended (d = -1).
func (ss *sessions) locked(s *Store, m *Message, d int) {
	if ss == nil || m.queue != Main {
		return
	}
	x := ss.get(m.SessionID)
	x.locked += d
	ss.refresh(x)
}

// refresh puts x in the ready index at its first available message, or
// takes it out, and forgets x when nothing is left of it.
func (ss *sessions) refresh(x *session) {
	first, ok := x.trees.avail.Min()
	want := ok && !x.held && x.trees.delayed == 0 // a delayed message holds the session back
	k := Key{Seq: first.seq, Copy: first.cp}
	if x.inReady && (!want || k != x.first) {
		ss.ready.Delete(readyItem{first: x.first})
		x.inReady = false
	}
	if want && !x.inReady {
		x.first, x.inReady = k, true
		ss.ready.ReplaceOrInsert(readyItem{first: k, s: x})
	}
	if !x.held && x.locked == 0 && x.trees.avail.Len() == 0 && x.trees.held.Len() == 0 {
		delete(ss.byID, x.id)
	}
}

// Hold marks the session id held by a receiver: it leaves the ready index
// until Unhold.
func (s *Store) Hold(id string) {
	x := s.sessions.get(id)
	x.held = true
	s.sessions.refresh(x)
}

// Unhold ends Hold.
func (s *Store) Unhold(id string) {
	if x := s.sessions.byID[id]; x != nil {
		x.held = false
		s.sessions.refresh(x)
	}
}

// NextSession returns the session, not held, whose first available message
// has the lowest key; false when there is none (SEMANTICS SS3).
func (s *Store) NextSession() (string, bool) {
	it, ok := s.sessions.ready.Min()
	if !ok {
		return "", false
	}
	return it.s.id, true
}

// AvailableIn returns the number of available messages of session id.
func (s *Store) AvailableIn(id string) int {
	if x := s.sessions.byID[id]; x != nil && x.trees.delayed == 0 {
		return x.trees.avail.Len()
	}
	return 0
}

// LockFirstIn is LockFirst for session id's messages.
func (s *Store) LockFirstIn(id string, until int64) *Message {
	x := s.sessions.byID[id]
	if x == nil {
		return nil
	}
	return s.lockFirst(&x.trees, until)
}

// RemoveFirstIn is RemoveFirst for session id's messages.
func (s *Store) RemoveFirstIn(id string) *Message {
	x := s.sessions.byID[id]
	if x == nil {
		return nil
	}
	return s.removeFirst(&x.trees)
}

// AscendIn is Ascend over session id's available and deferred messages,
// and its locked ones with locked set.
func (s *Store) AscendIn(id string, from Key, locked bool, fn func(*Message) bool) {
	x := s.sessions.byID[id]
	if x == nil {
		return
	}
	s.ascend(&x.trees, from, func(m *Message) bool {
		return locked && m.queue == Main && m.SessionID == id
	}, fn)
}

// LockedIn calls fn for each locked message of session id, in the order
// their locks end. fn may end the lock it is given (Move, Remove, Renew)
// but no other.
func (s *Store) LockedIn(id string, fn func(*Message)) {
	if x := s.sessions.byID[id]; x == nil || x.locked == 0 {
		return
	}
	var mine []*Message
	for m := s.locks.first(&s.arena); m != nil; m = s.locks.next(&s.arena, m) {
		if m.queue == Main && m.SessionID == id {
			mine = append(mine, m)
		}
	}
	for _, m := range mine {
		fn(m)
	}
}

// SessionIDs returns the ids of the sessions that have messages in the
// store, in no order.
func (s *Store) SessionIDs() []string {
	var ids []string
	for id, x := range s.sessions.byID {
		if x.locked > 0 || x.trees.avail.Len() > 0 || x.trees.held.Len() > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}
