package engine

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/minibus-go/minibus/internal/errs"
	"github.com/minibus-go/minibus/internal/store"
)

// The records of the journal (journal.go), one type per kind, each with
// its fields, how it is encoded and decoded, and how the replay applies
// it, side by side, as codec.go has a message's. A transition that changes
// the durable state says what happened, with the record's type:
//
//	e.log(r.kind(), r.encode)
//
// where r is a record value on the caller's stack (a method value passed
// on keeps it there: no allocation, and none at all without a journal,
// as log returns at once). A call whose record grows with the caller's
// data builds it first with begin, checks it (recordTooLarge), changes the
// state, then commits or drops it (SEMANTICS V3).
//
// On disk a record is its kind, the name of its entity (a queue's or
// topic's, then "", or a subscription's topic's, then its own; for
// create, delete and forward records the entity they create, delete or
// land in) and then its fields as encode writes them. The replay
// (replay.go) reads the kind and the names, makes the kind's type
// (newRecord), decodes it and applies it: an entityRecord under its
// entity's lock, through the same transition methods the live call used,
// a brokerRecord (create, delete, forward) onto the broker. A new journaled
// fact is a new kind at the end of recKind, its type here, and the line of
// the transition that logs it. The format of a kind never changes: one
// that needs other fields is a new kind, and the replay keeps reading the
// old one.

// recKind is the kind of a record: its first byte.
type recKind uint8

const (
	recCreate recKind = iota + 1
	recDelete
	recUpdate
	recRuleAdd
	recRuleDelete
	recSend
	recCancel
	recTake
	recFetch
	recSettle
	recRemove
	recDeadline
	recHold
	recRelease
	recState
	recTransfer
	recTransferFailed
	recTouch
	recRenew
	recTransferLost
)

var recNames = [...]string{
	recCreate: "create", recDelete: "delete", recUpdate: "update", recRuleAdd: "add rule",
	recRuleDelete: "delete rule", recSend: "send", recCancel: "cancel", recTake: "receive",
	recFetch: "receive deferred", recSettle: "settle", recRemove: "remove", recDeadline: "deadline",
	recHold: "accept session", recRelease: "release session", recState: "session state",
	recTransfer: "forward", recTransferFailed: "forward failed", recTouch: "activity",
	recRenew: "renew", recTransferLost: "forward lost",
}

func (k recKind) String() string {
	if int(k) < len(recNames) && recNames[k] != "" {
		return recNames[k]
	}
	return fmt.Sprintf("record kind %d", uint8(k))
}

// newRecords makes an empty record of each kind, for the replay to decode
// into.
var newRecords = [...]func() logRecord{
	recCreate:         func() logRecord { return new(createRecord) },
	recDelete:         func() logRecord { return new(deleteRecord) },
	recUpdate:         func() logRecord { return new(updateRecord) },
	recRuleAdd:        func() logRecord { return new(ruleAddRecord) },
	recRuleDelete:     func() logRecord { return new(ruleDeleteRecord) },
	recSend:           func() logRecord { return new(sendRecord) },
	recCancel:         func() logRecord { return new(cancelRecord) },
	recTake:           func() logRecord { return new(takeRecord) },
	recFetch:          func() logRecord { return new(fetchRecord) },
	recSettle:         func() logRecord { return new(settleRecord) },
	recRemove:         func() logRecord { return new(removeRecord) },
	recDeadline:       func() logRecord { return new(deadlineRecord) },
	recHold:           func() logRecord { return new(holdRecord) },
	recRelease:        func() logRecord { return new(releaseRecord) },
	recState:          func() logRecord { return new(stateRecord) },
	recTransfer:       func() logRecord { return new(transferRecord) },
	recTransferFailed: func() logRecord { return new(transferFailedRecord) },
	recTouch:          func() logRecord { return new(touchRecord) },
	recRenew:          func() logRecord { return new(renewRecord) },
	recTransferLost:   func() logRecord { return new(transferLostRecord) },
}

// newRecord returns an empty record of kind k, nil for an unknown kind.
func newRecord(k recKind) logRecord {
	if int(k) < len(newRecords) && newRecords[k] != nil {
		return newRecords[k]()
	}
	return nil
}

// logRecord is one journaled fact, without the header (kind and entity).
type logRecord interface {
	kind() recKind
	encode(enc *encoder)
	decode(d *decoder)
}

// entityRecord is a record about one entity, which the replay applies
// with the entity's lock held.
type entityRecord interface {
	logRecord
	apply(e *Entity) error
}

// brokerRecord is a record that creates, deletes or lands in an entity the
// header names: the replay applies it onto the broker. skip says that the
// unit's snapshot already holds the record's effect.
type brokerRecord interface {
	logRecord
	apply(b *Broker, name, sub string, skip bool) error
}

// begin returns the record of kind k about e, whose mutex is held, that
// encode writes, for commit or drop: nil when the broker keeps no journal
// (or is replaying one). Built and checked before the state changes
// (I2).
func (e *Entity) begin(k recKind, encode func(*encoder)) *encoder {
	if e.b.dur.j == nil {
		return nil
	}
	enc := &e.jenc
	enc.b = enc.b[:0]
	enc.u8(uint8(k))
	enc.entity(e)
	encode(enc)
	return enc
}

// log appends the record of kind k about e, whose lock is held, that
// encode writes; nothing when the broker keeps no journal.
func (e *Entity) log(k recKind, encode func(*encoder)) {
	if e.b.dur.j == nil {
		return
	}
	e.commit(e.begin(k, encode))
}

// journaled reports whether e's broker keeps a journal: whether its
// transitions log records.
func (e *Entity) journaled() bool { return e.b.dur.j != nil }

// keysOf appends the keys of ms to buf.
func keysOf(buf []store.Key, ms []*store.Message) []store.Key {
	for _, m := range ms {
		buf = append(buf, m.Key())
	}
	return buf
}

// createRecord: a queue, topic or subscription was created (the header
// names it) at instant at; a subscription with its rules.
type createRecord struct {
	entityKind Kind
	cfg        Config
	at         int64
	rules      []RuleSpec // a subscription's
}

func (r *createRecord) kind() recKind { return recCreate }

func (r *createRecord) encode(enc *encoder) {
	enc.u8(uint8(r.entityKind))
	enc.config(r.cfg)
	enc.svar(r.at)
	if r.entityKind == KindSubscription {
		enc.uvar(uint64(len(r.rules)))
		for _, s := range r.rules {
			enc.rule(s)
		}
	}
}

func (r *createRecord) decode(d *decoder) {
	r.entityKind, r.cfg, r.at = Kind(d.u8()), d.config(), d.svar()
	if r.entityKind == KindSubscription {
		n := d.count()
		r.rules = make([]RuleSpec, n)
		for i := range r.rules {
			r.rules[i] = d.rule()
		}
	}
}

func (r *createRecord) apply(b *Broker, name, sub string, _ bool) error {
	if sub == "" {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.lookupLocked(name) != nil {
			return errDiverged
		}
		b.createLocked(r.entityKind, name, r.cfg, r.at)
		return nil
	}
	rules := make([]*Rule, len(r.rules))
	for i, s := range r.rules {
		rule, err := CompileRule(s)
		if err != nil {
			return err
		}
		rules[i] = rule
	}
	t, err := b.replayEntity(name, "")
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, found := t.findSubLocked(sub); found && !t.subs[i].deleted.Load() {
		return errDiverged
	}
	leaveAll(t.enterSubsLocked(r.at)) // drops deleted subscriptions
	t.createSubLocked(sub, r.cfg, rules, r.at)
	return nil
}

// deleteRecord: the entity was deleted at instant at.
type deleteRecord struct{ at int64 }

func (r *deleteRecord) kind() recKind       { return recDelete }
func (r *deleteRecord) encode(enc *encoder) { enc.svar(r.at) }
func (r *deleteRecord) decode(d *decoder)   { r.at = d.svar() }

func (r *deleteRecord) apply(b *Broker, name, sub string, _ bool) error {
	e, err := b.replayEntity(name, sub)
	if err != nil {
		return err
	}
	if sub == "" {
		b.mu.Lock()
		defer b.mu.Unlock()
		e.mu.Lock()
		e.deleteLocked(r.at)
		e.mu.Unlock()
		delete(b.entities, nameKey(name))
		return nil
	}
	t := e.topic
	t.mu.Lock()
	defer t.mu.Unlock()
	e.mu.Lock()
	e.deleteLocked(r.at)
	e.mu.Unlock()
	leaveAll(t.enterSubsLocked(r.at))
	return nil
}

// updateRecord: the entity's configuration became cfg at instant at.
type updateRecord struct {
	cfg Config
	at  int64
}

func (r *updateRecord) kind() recKind       { return recUpdate }
func (r *updateRecord) encode(enc *encoder) { enc.config(r.cfg); enc.svar(r.at) }
func (r *updateRecord) decode(d *decoder)   { r.cfg, r.at = d.config(), d.svar() }

func (r *updateRecord) apply(e *Entity) error {
	e.updateLocked(r.cfg, r.at)
	return nil
}

// ruleAddRecord: a subscription got rule at instant at.
type ruleAddRecord struct {
	rule RuleSpec
	at   int64
}

func (r *ruleAddRecord) kind() recKind       { return recRuleAdd }
func (r *ruleAddRecord) encode(enc *encoder) { enc.rule(r.rule); enc.svar(r.at) }
func (r *ruleAddRecord) decode(d *decoder)   { r.rule, r.at = d.rule(), d.svar() }

func (r *ruleAddRecord) apply(e *Entity) error {
	rule, err := CompileRule(r.rule)
	if err != nil {
		return err
	}
	if _, found := findRule(e.rules, rule.Spec.Name); found || e.kind != KindSubscription {
		return errDiverged
	}
	e.addRuleLocked(rule, r.at)
	return nil
}

// ruleDeleteRecord: a subscription's rule called name (as the caller
// spelled it) was deleted at instant at.
type ruleDeleteRecord struct {
	name string
	at   int64
}

func (r *ruleDeleteRecord) kind() recKind       { return recRuleDelete }
func (r *ruleDeleteRecord) encode(enc *encoder) { enc.str(r.name); enc.svar(r.at) }
func (r *ruleDeleteRecord) decode(d *decoder)   { r.name, r.at = d.str(), d.svar() }

func (r *ruleDeleteRecord) apply(e *Entity) error {
	i, found := findRule(e.rules, r.name)
	if !found {
		return errDiverged
	}
	e.deleteRuleLocked(i, r.at)
	return nil
}

// sendRecord: msgs were sent at instant at, as they were before the send
// changed them.
type sendRecord struct {
	at   int64
	msgs []*store.Message
}

func (r *sendRecord) kind() recKind       { return recSend }
func (r *sendRecord) encode(enc *encoder) { r.encodeWithin(enc, math.MaxInt) }

// encodeWithin encodes r while it is at most limit bytes long: it returns
// how many of the messages it encoded, fewer than all when the last of
// them made it longer.
func (r *sendRecord) encodeWithin(enc *encoder, limit int) int {
	enc.svar(r.at)
	enc.uvar(uint64(len(r.msgs)))
	for i, m := range r.msgs {
		enc.message(m)
		if len(enc.b) > limit {
			return i + 1
		}
	}
	return len(r.msgs)
}

func (r *sendRecord) decode(d *decoder) {
	r.at = d.svar()
	r.msgs = make([]*store.Message, d.count())
	for i := range r.msgs {
		r.msgs[i] = d.message()
	}
}

func (r *sendRecord) apply(e *Entity) error {
	if err := e.sendLocked(r.msgs, r.at, nil, nil); err != nil {
		return fmt.Errorf("%w: %w", errDiverged, err)
	}
	return nil
}

// cancelRecord: the scheduled messages seqs were cancelled at instant at.
type cancelRecord struct {
	at   int64
	seqs []int64
}

func (r *cancelRecord) kind() recKind { return recCancel }

func (r *cancelRecord) encode(enc *encoder) {
	enc.svar(r.at)
	enc.uvar(uint64(len(r.seqs)))
	for _, seq := range r.seqs {
		enc.svar(seq)
	}
}

func (r *cancelRecord) decode(d *decoder) {
	r.at = d.svar()
	r.seqs = make([]int64, d.count())
	for i := range r.seqs {
		r.seqs[i] = d.svar()
	}
}

func (r *cancelRecord) apply(e *Entity) error {
	found := make([]*store.Message, len(r.seqs))
	for i, seq := range r.seqs {
		m := e.st.Get(store.Main, store.Key{Seq: seq})
		if m == nil || m.State() != store.Scheduled {
			return errDiverged
		}
		found[i] = m
	}
	e.cancelAllLocked(found, r.at)
	return nil
}

// takeRecord: a receiver of queue q (of session, "" for none) took the
// messages keys at instant at, in mode, locked until until in peek-lock
// mode.
type takeRecord struct {
	q         store.Queue
	mode      Mode
	session   string
	at, until int64
	keys      []store.Key
}

func (r *takeRecord) kind() recKind { return recTake }

func (r *takeRecord) encode(enc *encoder) {
	enc.u8(uint8(r.q))
	enc.u8(uint8(r.mode))
	enc.str(r.session)
	enc.svar(r.at)
	enc.svar(r.until)
	enc.uvar(uint64(len(r.keys)))
	for _, k := range r.keys {
		enc.key(k)
	}
}

func (r *takeRecord) decode(d *decoder) {
	r.q, r.mode, r.session = store.Queue(d.u8()), Mode(d.u8()), d.str()
	r.at, r.until = d.svar(), d.svar()
	n := d.count()
	r.keys = make([]store.Key, n)
	for i := range r.keys {
		r.keys[i] = d.key()
	}
}

func (r *takeRecord) apply(e *Entity) error {
	for _, k := range r.keys {
		m := e.find(r.q, k, r.session)
		if m == nil || m.State() != store.Available {
			return errDiverged
		}
		if r.mode == PeekLock {
			e.st.Lock(m, r.until)
		}
		e.deliveredLocked(m, r.q, r.mode, r.at, 0)
		if r.mode == ReceiveAndDelete {
			e.st.Remove(m)
		}
		if r.mode == PeekLock {
			e.noteLockReplay(m)
		}
	}
	r.taken(e)
	return nil
}

// taken is what a take or fetch of r's messages does after them.
func (r *takeRecord) taken(e *Entity) {
	if len(r.keys) > 0 && r.mode == PeekLock {
		e.noteDueLocked(r.until)
	}
	e.touchLocked(r.at)
	e.accessed = r.at
}

// fetchRecord: a receiver took deferred messages by their numbers; its
// fields are a takeRecord's.
type fetchRecord struct{ takeRecord }

func (r *fetchRecord) kind() recKind { return recFetch }

func (r *fetchRecord) apply(e *Entity) error {
	for _, k := range r.keys {
		m := e.find(r.q, k, r.session)
		if m == nil || m.State() != store.Deferred {
			return errDiverged
		}
		s := e.fetchDeferredLocked(m, r.q, r.mode, r.at, r.until, 0)
		s.Release()
		if r.mode == PeekLock {
			e.noteLockReplay(m)
		}
	}
	r.taken(e)
	return nil
}

// settleRecord: the locked message key of queue q was settled with op at
// instant at, with PropertiesToModify props, a dead-letter reason and
// description; an abandoned one waits until retry.
type settleRecord struct {
	q                   store.Queue
	key                 store.Key
	op                  Op
	at, retry           int64
	props               map[string]any
	reason, description string
}

func (r *settleRecord) kind() recKind { return recSettle }

func (r *settleRecord) encode(enc *encoder) {
	enc.u8(uint8(r.q))
	enc.key(r.key)
	enc.u8(uint8(r.op))
	enc.svar(r.at)
	enc.svar(r.retry)
	enc.props(r.props)
	enc.str(r.reason)
	enc.str(r.description)
}

func (r *settleRecord) decode(d *decoder) {
	r.q, r.key, r.op = store.Queue(d.u8()), d.key(), Op(d.u8())
	r.at, r.retry, r.props, r.reason, r.description = d.svar(), d.svar(), d.props(), d.str(), d.str()
}

func (r *settleRecord) apply(e *Entity) error {
	if r.op == Renew || r.op > Release {
		return fmt.Errorf("%w: settlement %d", errDiverged, r.op) // a renewal is a renewRecord
	}
	m := e.lockedReplay(r.q, r.key)
	if m == nil {
		return errDiverged
	}
	if err := e.settleLocked(m, r.op, r.props, r.reason, r.description, r.at, r.retry); err != nil {
		return fmt.Errorf("%w: %w", errDiverged, err)
	}
	return nil
}

// removeRecord: the messages keys of queue q (of session) were deleted
// without being delivered at instant at.
type removeRecord struct {
	q       store.Queue
	session string
	at      int64
	keys    []store.Key
}

func (r *removeRecord) kind() recKind { return recRemove }

func (r *removeRecord) encode(enc *encoder) {
	enc.u8(uint8(r.q))
	enc.str(r.session)
	enc.svar(r.at)
	enc.uvar(uint64(len(r.keys)))
	for _, k := range r.keys {
		enc.key(k)
	}
}

func (r *removeRecord) decode(d *decoder) {
	r.q, r.session, r.at = store.Queue(d.u8()), d.str(), d.svar()
	r.keys = make([]store.Key, d.count())
	for i := range r.keys {
		r.keys[i] = d.key()
	}
}

func (r *removeRecord) apply(e *Entity) error {
	doomed := make([]*store.Message, len(r.keys))
	for i, k := range r.keys {
		if doomed[i] = e.find(r.q, k, r.session); doomed[i] == nil {
			return errDiverged
		}
	}
	e.removeLocked(doomed, r.q, r.at)
	return nil
}

// What a deadlineRecord says came (deadlineLocked).
const (
	dlLockEnd uint8 = iota
	dlActivate
	dlReady
	dlExpire
)

// deadlineRecord: a deadline of the message key of queue q (of session)
// came at instant at: what says which.
type deadlineRecord struct {
	what    uint8
	q       store.Queue
	key     store.Key
	session string
	at      int64
}

func (r *deadlineRecord) kind() recKind { return recDeadline }

func (r *deadlineRecord) encode(enc *encoder) {
	enc.u8(r.what)
	enc.u8(uint8(r.q))
	enc.key(r.key)
	enc.str(r.session)
	enc.svar(r.at)
}

func (r *deadlineRecord) decode(d *decoder) {
	r.what, r.q, r.key, r.session, r.at = d.u8(), store.Queue(d.u8()), d.key(), d.str(), d.svar()
}

func (r *deadlineRecord) apply(e *Entity) error {
	if r.what == dlLockEnd {
		m := e.lockedReplay(r.q, r.key)
		if m == nil {
			return errDiverged
		}
		e.lockLostLocked(m, r.at)
		return nil
	}
	m := e.find(r.q, r.key, r.session)
	switch {
	case m == nil:
		return errDiverged
	case r.what == dlActivate && m.State() == store.Scheduled:
		e.activateLocked(m, r.at)
	case r.what == dlReady && m.State() == store.Delayed:
		e.readyLocked(m)
	case r.what == dlExpire && m.State() != store.Scheduled:
		e.expireLocked(m, r.at)
	default:
		return errDiverged
	}
	e.rescheduleLocked()
	return nil
}

// holdRecord: session id was accepted in mode at instant at.
type holdRecord struct {
	id   string
	mode Mode
	at   int64
}

func (r *holdRecord) kind() recKind       { return recHold }
func (r *holdRecord) encode(enc *encoder) { enc.str(r.id); enc.u8(uint8(r.mode)); enc.svar(r.at) }
func (r *holdRecord) decode(d *decoder)   { r.id, r.mode, r.at = d.str(), Mode(d.u8()), d.svar() }

func (r *holdRecord) apply(e *Entity) error {
	if e.sessions == nil {
		return errDiverged
	}
	if s := e.sessions.byID[r.id]; s != nil && s.holder != nil {
		return errDiverged
	}
	e.holdLocked(r.id, r.mode, r.at)
	return nil
}

// releaseRecord: session id's holder let it go at instant at, or its lock
// expired.
type releaseRecord struct {
	id      string
	at      int64
	expired bool
}

func (r *releaseRecord) kind() recKind { return recRelease }
func (r *releaseRecord) encode(enc *encoder) {
	enc.str(r.id)
	enc.svar(r.at)
	enc.boolean(r.expired)
}
func (r *releaseRecord) decode(d *decoder) { r.id, r.at, r.expired = d.str(), d.svar(), d.boolean() }

func (r *releaseRecord) apply(e *Entity) error {
	s := e.heldSession(r.id)
	if s == nil {
		return errDiverged
	}
	e.releaseSessionLocked(s, r.at, r.expired)
	return nil
}

// heldSession returns e's session id if it is held, or nil.
func (e *Entity) heldSession(id string) *session {
	if e.sessions == nil {
		return nil
	}
	if s := e.sessions.byID[id]; s != nil && s.holder != nil {
		return s
	}
	return nil
}

// stateRecord: session id's state became state (nil: none) at instant at.
type stateRecord struct {
	id    string
	state []byte
	at    int64
}

func (r *stateRecord) kind() recKind       { return recState }
func (r *stateRecord) encode(enc *encoder) { enc.str(r.id); enc.bytes(r.state); enc.svar(r.at) }
func (r *stateRecord) decode(d *decoder)   { r.id, r.state, r.at = d.str(), d.bytes(), d.svar() }

func (r *stateRecord) apply(e *Entity) error {
	s := e.heldSession(r.id)
	if s == nil {
		return errDiverged
	}
	if err := e.setStateLocked(s, r.state, r.at); err != nil {
		return fmt.Errorf("%w: %w", errDiverged, err)
	}
	return nil
}

// transferRecord: msg, which left the entity fromName (a subscription's
// topic, then fromSub) under key at instant at, landed in the entity the
// header names.
type transferRecord struct {
	fromName, fromSub string
	key               store.Key
	at                int64
	msg               *store.Message
	// msgAt is where encode wrote msg in its encoder (not a field).
	msgAt int
}

func (r *transferRecord) kind() recKind { return recTransfer }

func (r *transferRecord) encode(enc *encoder) {
	enc.str(r.fromName)
	enc.str(r.fromSub)
	enc.key(r.key)
	enc.svar(r.at)
	r.msgAt = len(enc.b)
	enc.message(r.msg)
}

func (r *transferRecord) decode(d *decoder) {
	r.fromName, r.fromSub, r.key, r.at = d.str(), d.str(), d.key(), d.svar()
	r.msg = d.message()
}

// apply takes the message out of the outbox whatever the snapshots cover,
// and lands it in its destination unless the destination's snapshot has
// it.
func (r *transferRecord) apply(b *Broker, name, sub string, skip bool) error {
	if f := b.replay.unsend(r.fromName, r.fromSub, r.key, &b.outbox); f != nil {
		store.Recycle(f.m)
	}
	if skip {
		store.Recycle(r.msg)
		return nil
	}
	e, err := b.replayEntity(name, sub)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if why := e.refusesLocked(r.msg); why != "" {
		return fmt.Errorf("%w: %s", errDiverged, why)
	}
	if why := e.acceptForwardLocked(r.msg, r.at, nil); why != "" {
		return fmt.Errorf("%w: %s", errDiverged, why)
	}
	return nil
}

// transferFailedRecord: the message that left the entity under key could
// not land, for the reason why, and went to its transfer dead-letter queue.
type transferFailedRecord struct {
	key store.Key
	why string
}

func (r *transferFailedRecord) kind() recKind       { return recTransferFailed }
func (r *transferFailedRecord) encode(enc *encoder) { enc.key(r.key); enc.str(r.why) }
func (r *transferFailedRecord) decode(d *decoder)   { r.key, r.why = d.key(), d.str() }

func (r *transferFailedRecord) apply(e *Entity) error {
	top, sub := e, ""
	if e.topic != nil {
		top, sub = e.topic, e.name
	}
	f := e.b.replay.unsend(top.name, sub, r.key, &e.b.outbox)
	if f == nil {
		return errDiverged
	}
	f.from = e
	e.transferFailedLocked(f, r.why)
	return nil
}

// transferLostRecord: the message that left the entity, deleted since,
// under key could not land, and is gone with it.
type transferLostRecord struct{ key store.Key }

func (r *transferLostRecord) kind() recKind       { return recTransferLost }
func (r *transferLostRecord) encode(enc *encoder) { enc.key(r.key) }
func (r *transferLostRecord) decode(d *decoder)   { r.key = d.key() }

// apply takes the message out of the outbox by its source's name: the
// source is deleted, perhaps a namesake created since.
func (r *transferLostRecord) apply(b *Broker, name, sub string, _ bool) error {
	if f := b.replay.unsend(name, sub, r.key, &b.outbox); f != nil {
		store.Recycle(f.m)
	}
	return nil
}

// touchRecord: activity at instant at that changed nothing else.
type touchRecord struct{ at int64 }

func (r *touchRecord) kind() recKind       { return recTouch }
func (r *touchRecord) encode(enc *encoder) { enc.svar(r.at) }
func (r *touchRecord) decode(d *decoder)   { r.at = d.svar() }

func (r *touchRecord) apply(e *Entity) error {
	e.touchLocked(r.at)
	return nil
}

// renewRecord: a lock was moved to end at until: session id's (session
// set) or that of the message key of queue q.
type renewRecord struct {
	session bool
	id      string
	q       store.Queue
	key     store.Key
	until   int64
}

func (r *renewRecord) kind() recKind { return recRenew }

func (r *renewRecord) encode(enc *encoder) {
	enc.boolean(r.session)
	if r.session {
		enc.str(r.id)
	} else {
		enc.u8(uint8(r.q))
		enc.key(r.key)
	}
	enc.svar(r.until)
}

func (r *renewRecord) decode(d *decoder) {
	if r.session = d.boolean(); r.session {
		r.id = d.str()
	} else {
		r.q, r.key = store.Queue(d.u8()), d.key()
	}
	r.until = d.svar()
}

func (r *renewRecord) apply(e *Entity) error {
	if r.session {
		s := e.heldSession(r.id)
		if s == nil {
			return errDiverged
		}
		e.relockSessionLocked(s, r.until)
		return nil
	}
	m := e.b.replay.locks[lockRef{e, r.q, r.key}]
	if m == nil || !e.st.Holds(m) || m.State() != store.Locked {
		return errDiverged
	}
	e.relockLocked(m, r.until)
	return nil
}

// entity encodes e's name: a queue's or topic's, then "", or a
// subscription's topic's, then its own.
func (enc *encoder) entity(e *Entity) {
	if e.topic != nil {
		enc.str(e.topic.name)
		enc.str(e.name)
		return
	}
	enc.str(e.name)
	enc.str("")
}

// commit appends the record enc, which begin returned, under e's mutex
// (I1); nothing when enc is
// nil.
func (e *Entity) commit(enc *encoder) {
	if enc == nil {
		return
	}
	if f := e.landing; f != nil {
		// Out of flying as its record is appended (I7), in one step under the
		// outbox's lock: a snapshot that reads the set finds the message
		// on its way or its record appended, never both (Open would
		// deliver it twice) nor neither (it would be lost) (snapshot.go).
		e.landing = nil
		o := &e.b.outbox
		o.mu.Lock()
		delete(o.flying, f)
		e.b.appendRec(enc.b)
		o.mu.Unlock()
	} else {
		e.b.appendRec(enc.b)
	}
	if cap(enc.b) > 1<<20 {
		enc.b = nil // a large batch's buffer is not kept
	}
}

// keyRoom returns how many message keys, with their count, fit in a
// record that holds used bytes already; at least one, so that a call
// always makes progress (a limit that small is a test's).
func (b *Broker) keyRoom(used int) int {
	return max(1, (b.dur.maxRecord-used-binary.MaxVarintLen64)/maxKeySize)
}

// recordTooLarge returns nil when enc, a record begin returned, fits in the
// journal. Otherwise it drops enc and returns the error of the call that
// built it: it wraps sentinel, says what made the record large and names
// the limit.
func (e *Entity) recordTooLarge(enc *encoder, sentinel error, what string) error {
	if enc == nil || len(enc.b) <= e.b.dur.maxRecord {
		return nil
	}
	n := len(enc.b)
	enc.drop()
	return e.errRecord(sentinel, what, int64(n), false)
}

// errRecord is the error of a call whose record would take n bytes (at
// least n when atLeast) because of what: more than the journal takes.
func (e *Entity) errRecord(sentinel error, what string, n int64, atLeast bool) error {
	least := ""
	if atLeast {
		least = "at least "
	}
	return errs.Errorf(sentinel, e.describe(), "%s would make a log record of %s%d bytes, more than the %d bytes a durable namespace stores for one call (the log's record limit)",
		what, least, n, e.b.dur.maxRecord)
}

// drop forgets a record that is not committed.
func (enc *encoder) drop() {
	if cap(enc.b) > 1<<20 {
		enc.b = nil
	} else {
		enc.b = enc.b[:0]
	}
}
