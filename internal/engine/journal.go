package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/minibus-go/minibus/internal/errs"
)

// A durable broker writes every transition to a Journal, a write-ahead log
// (internal/wal), as one record appended while the mutex of the entity it
// changes is held, so that log order is state order. A record names its
// entity and carries what the transition needs, its instant included; the
// replay (replay.go) applies it through the same methods the live call used,
// reading no clock. Each call, once it holds no mutex, waits until the last
// record appended is as durable as the journal promises (done), so nothing
// it acknowledges or shows, a message it received or peeked included, can
// be lost by a crash.
//
// What is not recorded: locks' tokens (locks do not outlast the process,
// SEMANTICS L6; their renewals are recorded, so that a lock renewed before
// a crash is not ended at its earlier end by the catch-up at Open), the
// receivers, the idle time of a read that
// changes nothing in an entity without AutoDeleteOnIdle, and the pruning of
// duplicate-detection histories, which the next catch-up repeats.

// A record is at most Recovery.MaxRecord bytes (the log's limit, 1 GiB),
// and a call is one record, so that a crash keeps all of it or none. A
// call whose record would pass the limit is refused before it changes
// anything (SEMANTICS V3): each call whose record grows with its caller's
// data (a batch of messages, PropertiesToModify and a dead-letter reason,
// a session state, a list of sequence numbers, rules) builds or bounds
// its record before it changes the state, and checks it; a receive or a
// delete names at most as many messages as a record holds (keyRoom) and
// takes no more. A record over the limit that reaches appendRec all the
// same fails the broker (ErrStoreFailed) rather than the log or the
// caller's goroutine.

// maxKeySize is the most bytes a message's key takes in a record.
const maxKeySize = 2 * binary.MaxVarintLen64

// setMaxRecord sets the largest record the journal takes; 0 or less: no
// limit.
func (d *durability) setMaxRecord(n int) {
	if n <= 0 {
		n = math.MaxInt
	}
	d.maxRecord = n
}

// appendRec appends rec to the journal and wakes the snapshotter when the
// log has grown enough. A record over the journal's limit, which the call
// that made it should have refused, fails the broker instead: the call and
// every later one get ErrStoreFailed, no snapshot is taken, and the next
// Open finds the state before it.
func (b *Broker) appendRec(rec []byte) {
	if len(rec) > b.dur.maxRecord {
		b.storeFailed(fmt.Errorf("a %v record of %d bytes is over the log's limit of %d bytes", recKind(rec[0]), len(rec), b.dur.maxRecord))
		return
	}
	b.dur.j.Append(rec)
	if b.dur.kick != nil && b.dur.since.Add(int64(len(rec))) >= b.dur.compactAt.Load() {
		select {
		case b.dur.kick <- struct{}{}:
		default:
		}
	}
}

// touchRecLocked records an activity at now that changes nothing else (a
// peek, a receive that found nothing) when it matters: for an entity that
// is deleted when idle (SEMANTICS A2).
func (e *Entity) touchRecLocked(now int64) {
	idle := e.idleWatched.Load() || (e.topic != nil && e.topic.idleWatched.Load())
	if idle && e.lastActivity.Load() < now {
		r := touchRecord{at: now}
		e.log(r.kind(), r.encode)
	}
	e.touchLocked(now)
}

// durable waits until every record appended so far is as durable as the
// journal promises, in a durable broker, and returns the error the call
// gets when it is not: ErrStoreFailed, which fails every later call too.
func (b *Broker) durable() error {
	if b.dur.j == nil {
		return nil
	}
	if err := b.dur.j.Wait(b.dur.j.Last()); err != nil {
		return b.storeFailed(err)
	}
	return b.errFailed() // a record appendRec refused
}

// storeFailed makes the broker failed with cause, if it was not, and
// returns the error every call gets from now on.
func (b *Broker) storeFailed(cause error) error {
	err := fmt.Errorf("minibus: namespace: %w (%w)", errs.ErrStoreFailed, cause)
	b.dur.failed.CompareAndSwap(nil, &err)
	return *b.dur.failed.Load()
}

// errFailed returns the broker's store failure, nil if none.
func (b *Broker) errFailed() error {
	if p := b.dur.failed.Load(); p != nil {
		return *p
	}
	return nil
}
