package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

// What TestKillLoop checks after each kill: the model of what the child
// acknowledged, what a check finds in the directory, and the comparison.

// The parent's model. An item is one message in one entity, named by its
// entity's code and its body, which is unique: "w 12.3.45". The codes: w
// (queue work), d (dd), ta and tr (subscriptions all and red of topic t),
// s (sess). A message's place is its entity's queue or its dead-letter
// queue.
//
// The rules, for each item after a kill:
//
//   - A send or schedule acknowledged ("S", "SC"), a dead-letter or defer
//     acknowledged ("L", "F"), or an item seen at the last check must be
//     found, unless its removal (complete "C", cancel "K") was
//     acknowledged or attempted: "C?" is written before the call, so an
//     attempt without an acknowledgement (or "N", failed) may have
//     happened or not. A message locked at the
//     kill is available again after Open (L6), or dead-lettered at
//     MaxDeliveryCount: both are places it can be.
//   - A receive-and-delete ("R?" before the call, "R" with the bodies
//     after) in flight at the kill may have taken messages nobody knows:
//     at most as many acknowledged items of its entity as it asked for may
//     be missing.
//   - A removal acknowledged ("C", "K", "R") must not be found, now or later; a
//     resend to dd of a body whose send was acknowledged ("U?" before the
//     call) must never be found (duplicate detection, DD1); an item not
//     found at a check must not come back. A found item that is none of
//     these is a send of the killed cycle in flight at the kill: all or
//     none of a batch is what SendMessages promises, but consumers blur
//     that, so it is not checked.
//   - A message received and held locked until the kill ("H", with its
//     delivery count) is found, its delivery counted (L6).
//   - An item dead-lettered stays in the dead-letter queue; one deferred is
//     deferred or dead-lettered. A scheduled message found still scheduled
//     is due after Open's now (the catch-up ran at now).
//   - An item keeps its sequence number, but for a scheduled message,
//     which gets a new, higher one when it activates (S4); no two items of
//     an entity share one; a message of the killed cycle has a number above the probe of the
//     last check, and each probe (a message scheduled and cancelled right
//     away) gets a number above every number acknowledged or seen: none is
//     reused. Delivery counts never go down.
//   - RuntimeProperties count what the peeks found; a session's state is
//     the last acknowledged or one set since without an acknowledgement.
type killModel struct {
	cycle int
	items map[string]*killItem
	// rd holds the receive-and-deletes in flight: maxMessages by entity
	// and goroutine ("d 7").
	rd map[string]int
	// state is each session's state as acknowledged or seen; maybe holds
	// the states set since without an acknowledgement.
	state map[string]string
	maybe map[string][]string
	// maxSeq is the highest sequence number acknowledged or seen, floor the
	// last probe's, by numbering: w, d, s, t (for ta and tr).
	maxSeq, floor map[string]int64
	// sentDD are the dd bodies whose sends this cycle acknowledged: the
	// next child sends some of them again.
	sentDD []string
	stats  killStats
}

// killStats counts what the checks verified.
type killStats struct {
	early                       int // kills planned during Open
	sends                       int // acknowledged sends and schedules
	completes, deletes, cancels int // acknowledged removals, by kind
	moves                       int // acknowledged dead-letters and defers
	resends                     int // acknowledged resends duplicate detection dropped
	states                      int // session states read back
}

// killItem is what the model knows of one item.
type killItem struct {
	seq      int64
	dc       uint32
	place    killPlace // where it must be: anywhere, deferred or dead-lettered, dead-lettered
	must     bool      // it must be found, unless removed
	removing bool      // a removal was attempted, not acknowledged
	gone     bool      // a removal was acknowledged
	never    bool      // a dropped duplicate: never found
	// scheduled: seq is the number it was scheduled under; it gets a new,
	// higher one when it activates (SEMANTICS S4).
	scheduled bool
}

type killPlace uint8

const (
	placeAny killPlace = iota
	placeDeferred
	placeDeadLetter
)

func newKillModel() *killModel {
	return &killModel{items: map[string]*killItem{}, rd: map[string]int{}, state: map[string]string{}, maybe: map[string][]string{}, maxSeq: map[string]int64{}, floor: map[string]int64{}}
}

// begin starts cycle c.
func (m *killModel) begin(c int) { m.cycle = c }

// takeResends returns up to four dd bodies acknowledged in the last cycle.
func (m *killModel) takeResends() []string {
	out := m.sentDD[max(0, len(m.sentDD)-4):]
	m.sentDD = nil
	return out
}

func (m *killModel) item(code, body string) *killItem {
	k := code + " " + body
	it := m.items[k]
	if it == nil {
		it = &killItem{}
		m.items[k] = it
	}
	return it
}

// numbering names the sequence of numbers an entity's messages take.
func numbering(code string) string {
	if code == "ta" || code == "tr" {
		return "t"
	}
	return code
}

// bodyCycle is the cycle whose child made body: its first field.
func bodyCycle(body string) int {
	c, _, _ := strings.Cut(body, ".")
	n, _ := strconv.Atoi(c)
	return n
}

// apply takes one line of the child.
func (m *killModel) apply(line string) error {
	f := strings.Fields(line)
	if len(f) == 0 {
		return errors.New("empty line from the child")
	}
	if f[0] == "E" {
		return fmt.Errorf("the child failed: %s", line)
	}
	if f[0] == "ready" {
		return nil
	}
	if len(f) < 3 {
		return fmt.Errorf("line %q: too short", line)
	}
	switch f[0] {
	case "S", "SC", "U?", "U", "N", "C?":
		return m.applySend(f)
	case "C", "K", "L", "F", "H":
		return m.applyNumbered(f)
	case "R?":
		n, err := strconv.Atoi(f[len(f)-1])
		m.rd[f[1]+" "+f[2]] = n
		return err
	case "R":
		delete(m.rd, f[1]+" "+f[2])
		return m.applyBodies("R", f[1], f[3:])
	case "X?":
		m.maybe[f[1]] = append(m.maybe[f[1]], f[2])
	case "X":
		m.state[f[1]], m.maybe[f[1]] = f[2], nil
	default:
		return fmt.Errorf("line %q: unknown", line)
	}
	return nil
}

// applySend takes the lines about sends, schedules, resends and removal
// attempts.
func (m *killModel) applySend(f []string) error {
	code, bodies := f[1], f[2:]
	switch f[0] {
	case "S":
		m.stats.sends += len(bodies)
		if code == "d" {
			m.sentDD = append(m.sentDD, bodies...)
		}
		for _, b := range bodies {
			for _, c := range copiesOf(code, b) {
				it := m.item(c, b)
				it.must = true
			}
		}
	case "SC":
		return m.applyBodies("SC", code, bodies)
	case "U?":
		m.item(code, bodies[0]).never = true
	case "U":
		m.stats.resends++
	case "N":
		m.item(code, bodies[0]).removing = false
	case "C?":
		m.item(code, bodies[0]).removing = true
	}
	return nil
}

// copiesOf returns the entities a send to code makes items in: a topic's
// message goes to "all", and to "red" when its body ends in 'r'.
func copiesOf(code, body string) []string {
	switch {
	case code != "t":
		return []string{code}
	case strings.HasSuffix(body, "r"):
		return []string{"ta", "tr"}
	}
	return []string{"ta"}
}

// applyNumbered takes a line about one item with its sequence number (and,
// for "H", its delivery count).
func (m *killModel) applyNumbered(f []string) error {
	want := 4
	if f[0] == "H" {
		want = 5
	}
	if len(f) != want {
		return fmt.Errorf("line %q: %d fields", strings.Join(f, " "), len(f))
	}
	seq, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return fmt.Errorf("line %q: %w", strings.Join(f, " "), err)
	}
	if f[0] == "H" {
		dc, err := strconv.ParseUint(f[4], 10, 32)
		if err != nil {
			return fmt.Errorf("line %q: %w", strings.Join(f, " "), err)
		}
		it := m.item(f[1], f[2])
		it.must, it.dc = true, max(it.dc, uint32(dc))
	}
	return m.applySettled(f[0], f[1], f[2], seq)
}

// applyBodies applies the acknowledgement kind ("SC", "R") to the items of
// "seq:body" fields.
func (m *killModel) applyBodies(kind, code string, fields []string) error {
	for _, f := range fields {
		s, body, ok := strings.Cut(f, ":")
		seq, err := strconv.ParseInt(s, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("%s: bad seq:body %q", code, f)
		}
		if err := m.applySettled(kind, code, body, seq); err != nil {
			return err
		}
	}
	return nil
}

// applySettled takes an acknowledgement of kind (schedule "SC",
// receive-and-delete "R", completion "C", cancellation "K", dead-letter
// "L", defer "F", or a message held locked "H") of an item with its
// sequence number.
func (m *killModel) applySettled(kind, code, body string, seq int64) error {
	it := m.item(code, body)
	if bodyCycle(body) == m.cycle && seq <= m.floor[numbering(code)] {
		return fmt.Errorf("%s %s: new message numbered %d, at or below %d given before the kill", code, body, seq, m.floor[numbering(code)])
	}
	m.maxSeq[numbering(code)] = max(m.maxSeq[numbering(code)], seq)
	if err := it.numbered(kind, seq); err != nil {
		return fmt.Errorf("%s %s: %w", code, body, err)
	}
	switch kind {
	case "SC":
		it.must = true
		m.stats.sends++
	case "R":
		it.gone = true
		m.stats.deletes++
	case "C":
		it.gone = true
		m.stats.completes++
	case "K":
		it.gone = true
		m.stats.cancels++
	case "L":
		it.must, it.place = true, placeDeadLetter
		m.stats.moves++
	case "F":
		it.must, it.place = true, max(it.place, placeDeferred)
		m.stats.moves++
	}
	return nil
}

// numbered notes that an acknowledgement of kind gave the item number
// seq. A scheduled message has two numbers, the second higher (SEMANTICS
// S4), and the lines of two goroutines can come in either order: a
// consumer's, with the second number, before the producer's "SC" with the
// first.
func (it *killItem) numbered(kind string, seq int64) error {
	switch {
	case it.seq == 0:
		it.seq, it.scheduled = seq, kind == "SC"
	case it.seq == seq:
	case kind == "SC" && seq < it.seq: // activated, and its number known first
	case it.scheduled && seq > it.seq: // activated since
		it.seq, it.scheduled = seq, false
	default:
		return fmt.Errorf("sequence number %d, was %d", seq, it.seq)
	}
	return nil
}

// killWhere is where a check found an item.
type killWhere uint8

const (
	whereActive killWhere = iota // available (or locked, by the parent: never)
	whereDeferred
	whereScheduled
	whereDeadLetter
)

func (w killWhere) String() string {
	return [...]string{"active", "deferred", "scheduled", "dead-lettered"}[w]
}

// killSeen is one item as a check found it.
type killSeen struct {
	seq   int64
	dc    uint32
	where killWhere
	due   time.Time // EnqueuedTime: a scheduled message's activation
}

// killObs is what a check found: the items, each session's state, the
// counts by entity and where, and what broke a rule on the way.
type killObs struct {
	seen   map[string]killSeen
	bySeq  map[string]string // "w 17" → its item
	counts map[string]*[4]int64
	states map[string]string
	bad    []string
}

// killPeeker is a receiver or a session receiver.
type killPeeker interface {
	PeekMessages(context.Context, int, *minibus.PeekMessagesOptions) ([]*minibus.ReceivedMessage, error)
}

// peekKill peeks every message of r, from sequence number 1.
func peekKill(ctx context.Context, r killPeeker) ([]*minibus.ReceivedMessage, error) {
	var all []*minibus.ReceivedMessage
	from := int64(1)
	for {
		msgs, err := r.PeekMessages(ctx, 500, &minibus.PeekMessagesOptions{FromSequenceNumber: from})
		if err != nil || len(msgs) == 0 {
			return all, err
		}
		all = append(all, msgs...)
		from = msgs[len(msgs)-1].SequenceNumber + 1
	}
}

// killReceivable is a queue or a subscription.
type killReceivable interface {
	NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
}

// peekKillQueue peeks e's dead-letter queue, and its main queue too when
// main is set.
func (o *killObs) peekKillQueue(ctx context.Context, code string, e killReceivable, main bool) error {
	subs := []minibus.SubQueue{minibus.SubQueueDeadLetter}
	if main {
		subs = append(subs, minibus.SubQueueNone)
	}
	for _, sub := range subs {
		r, err := e.NewReceiver(&minibus.ReceiverOptions{SubQueue: sub})
		if err != nil {
			return err
		}
		msgs, err := peekKill(ctx, r)
		_ = r.Close(ctx)
		if err != nil {
			return err
		}
		o.add(code, msgs, sub == minibus.SubQueueDeadLetter)
	}
	return nil
}

// add notes msgs, found in code's main or dead-letter queue.
func (o *killObs) add(code string, msgs []*minibus.ReceivedMessage, dead bool) {
	if o.counts[code] == nil {
		o.counts[code] = &[4]int64{}
	}
	for _, msg := range msgs {
		key := code + " " + string(msg.Body)
		s := killSeen{seq: msg.SequenceNumber, dc: msg.DeliveryCount, due: msg.EnqueuedTime}
		switch {
		case dead:
			s.where = whereDeadLetter
		case msg.State == minibus.MessageStateDeferred:
			s.where = whereDeferred
		case msg.State == minibus.MessageStateScheduled:
			s.where = whereScheduled
		}
		if _, dup := o.seen[key]; dup {
			o.bad = append(o.bad, fmt.Sprintf("%s: found twice", key))
		}
		seqKey := fmt.Sprintf("%s %d", code, s.seq)
		if other, dup := o.bySeq[seqKey]; dup {
			o.bad = append(o.bad, fmt.Sprintf("%s and %s: both numbered %d", key, other, s.seq))
		}
		o.seen[key], o.bySeq[seqKey] = s, key
		o.counts[code][s.where]++
	}
}

// observeKill reads every message of ns, each session's state and the
// counts, keeping the state for the next cycle: it peeks, and accepts each
// session only to read it.
func observeKill(ctx context.Context, ns *minibus.Namespace) (*killObs, error) {
	o := &killObs{seen: map[string]killSeen{}, bySeq: map[string]string{}, counts: map[string]*[4]int64{}, states: map[string]string{}}
	work, err1 := ns.Queue("work")
	dd, err2 := ns.Queue("dd")
	sess, err3 := ns.Queue("sess")
	top, err4 := ns.Topic("t")
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	all, err1 := top.Subscription("all")
	red, err2 := top.Subscription("red")
	if err := errors.Join(err1, err2,
		o.peekKillQueue(ctx, "w", work, true), o.peekKillQueue(ctx, "d", dd, true),
		o.peekKillQueue(ctx, "ta", all, true), o.peekKillQueue(ctx, "tr", red, true),
		o.peekKillQueue(ctx, "s", sess, false), o.peekSessions(ctx, sess)); err != nil {
		return nil, err
	}
	for code, q := range map[string]*minibus.Queue{"w": work, "d": dd, "s": sess} {
		rt := q.RuntimeProperties()
		o.counted(code, [4]int64{rt.ActiveMessageCount, 0, rt.ScheduledMessageCount, rt.DeadLetterMessageCount}, rt.TotalMessageCount)
	}
	for code, s := range map[string]*minibus.Subscription{"ta": all, "tr": red} {
		rt := s.RuntimeProperties()
		o.counted(code, [4]int64{rt.ActiveMessageCount, 0, 0, rt.DeadLetterMessageCount}, rt.TotalMessageCount)
	}
	return o, nil
}

// peekSessions peeks the messages of every session of q, s0 to s3 and any
// other ListSessions names, and reads their states.
func (o *killObs) peekSessions(ctx context.Context, q *minibus.Queue) error {
	ids, err := q.ListSessions(ctx)
	if err != nil {
		return err
	}
	for i := range 4 {
		if sid := fmt.Sprintf("s%d", i); !strings.Contains(","+strings.Join(ids, ",")+",", ","+sid+",") {
			ids = append(ids, sid)
		}
	}
	for _, sid := range ids {
		s, err := q.AcceptSession(ctx, sid, nil)
		if err != nil {
			return err
		}
		msgs, err1 := peekKill(ctx, s)
		state, err2 := s.GetSessionState(ctx, nil)
		if err := errors.Join(err1, err2, s.Close(ctx)); err != nil {
			return err
		}
		for _, m := range msgs {
			if m.SessionID != sid || !strings.HasSuffix(string(m.Body), "-"+sid) {
				o.bad = append(o.bad, fmt.Sprintf("s %s: in session %q", m.Body, m.SessionID))
			}
		}
		o.add("s", msgs, false)
		o.states[sid] = string(state)
	}
	return nil
}

// counted compares an entity's RuntimeProperties (active, deferred: 0,
// scheduled, dead-lettered; and the total) with what the peeks found.
func (o *killObs) counted(code string, rt [4]int64, total int64) {
	found := [4]int64{}
	if c := o.counts[code]; c != nil {
		found = *c
	}
	found[whereActive] += found[whereDeferred] // ActiveMessageCount counts the deferred ones
	found[whereDeferred] = 0
	if rt != found || total != rt[0]+rt[2]+rt[3] {
		o.bad = append(o.bad, fmt.Sprintf("%s: RuntimeProperties count %v (total %d); the peeks found %v (active, -, scheduled, dead-lettered)", code, rt, total, found))
	}
}

// killScheduler is a queue or a topic.
type killScheduler interface {
	ScheduleMessages(context.Context, []*minibus.Message, time.Time, *minibus.ScheduleMessagesOptions) ([]int64, error)
	CancelScheduledMessages(context.Context, []int64, *minibus.CancelScheduledMessagesOptions) error
}

// probeKill schedules a message in each numbering, an hour from now,
// cancels it and returns its number: the next a send gets.
func probeKill(ctx context.Context, ns *minibus.Namespace, now time.Time) (map[string]int64, error) {
	work, err1 := ns.Queue("work")
	dd, err2 := ns.Queue("dd")
	sess, err3 := ns.Queue("sess")
	top, err4 := ns.Topic("t")
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for code, e := range map[string]killScheduler{"w": work, "d": dd, "s": sess, "t": top} {
		seqs, err := e.ScheduleMessages(ctx, []*minibus.Message{{Body: []byte("probe"), SessionID: "s0"}}, now.Add(time.Hour), nil)
		if err != nil {
			return nil, err
		}
		if err := e.CancelScheduledMessages(ctx, seqs, nil); err != nil {
			return nil, err
		}
		out[code] = seqs[0]
	}
	return out, nil
}

// compare checks what the check found against the model (see killModel
// for the rules); now is Open's.
func (m *killModel) compare(o *killObs, now time.Time) []string {
	budget := map[string]int{}
	for k, n := range m.rd {
		code, _, _ := strings.Cut(k, " ")
		budget[code] += n
	}
	var bad []string
	for key, it := range m.items {
		bad = appendIf(bad, m.compareItem(key, it, o.seen, budget))
	}
	for key, s := range o.seen {
		bad = appendIf(bad, m.compareSeen(key, s, now))
		code, body, _ := strings.Cut(key, " ")
		if other, ok := o.seen["ta "+body]; ok && code == "tr" && other.seq != s.seq {
			bad = append(bad, fmt.Sprintf("%s: numbered %d, its copy in all %d", key, s.seq, other.seq))
		}
	}
	for sid, got := range o.states {
		if want := m.state[sid]; got != want && !strings.Contains(" "+strings.Join(m.maybe[sid], " ")+" ", " "+got+" ") {
			bad = append(bad, fmt.Sprintf("session %s: state %q, acknowledged %q, set since %q", sid, got, want, m.maybe[sid]))
		}
	}
	return bad
}

func appendIf(bad []string, s string) []string {
	if s == "" {
		return bad
	}
	return append(bad, s)
}

// compareItem checks one item of the model.
func (m *killModel) compareItem(key string, it *killItem, seen map[string]killSeen, budget map[string]int) string {
	s, found := seen[key]
	code, _, _ := strings.Cut(key, " ")
	switch {
	case it.never && found:
		return key + ": a resend that duplicate detection dropped is here (DD1)"
	case it.gone && found:
		return key + ": its removal was acknowledged, and it is back"
	case found:
		return m.placed(key, it, s)
	case it.never, it.gone, it.removing, !it.must:
		return ""
	case budget[code] > 0: // taken by a receive-and-delete in flight
		budget[code]--
		return ""
	}
	return key + ": acknowledged, and lost"
}

// placed checks where a found item is and its number.
func (m *killModel) placed(key string, it *killItem, s killSeen) string {
	switch {
	case it.place == placeDeadLetter && s.where != whereDeadLetter:
		return fmt.Sprintf("%s: dead-lettered, and %v", key, s.where)
	case it.place == placeDeferred && s.where != whereDeferred && s.where != whereDeadLetter:
		return fmt.Sprintf("%s: deferred, and %v", key, s.where)
	case it.seq != 0 && s.seq != it.seq && !(it.scheduled && s.where != whereScheduled && s.seq > it.seq):
		return fmt.Sprintf("%s: numbered %d, was %d", key, s.seq, it.seq)
	case s.dc < it.dc:
		return fmt.Sprintf("%s: delivery count %d, was %d", key, s.dc, it.dc)
	}
	return ""
}

// compareSeen checks a found item against the rules of every message:
// known or sent by the killed child, numbered above the last probe if new,
// scheduled only for later.
func (m *killModel) compareSeen(key string, s killSeen, now time.Time) string {
	code, body, _ := strings.Cut(key, " ")
	fresh := bodyCycle(body) == m.cycle
	m.maxSeq[numbering(code)] = max(m.maxSeq[numbering(code)], s.seq)
	switch {
	case m.items[key] == nil && !fresh:
		return key + ": neither acknowledged nor found at the last check: it came back"
	case fresh && s.seq <= m.floor[numbering(code)]:
		return fmt.Sprintf("%s: new, numbered %d, at or below the last probe's %d", key, s.seq, m.floor[numbering(code)])
	case s.where == whereScheduled && !s.due.After(now):
		return fmt.Sprintf("%s: still scheduled for %v, after Open at %v", key, s.due, now)
	}
	return ""
}

// probed checks the probes' numbers: above every number acknowledged or
// seen, none reused. They are the floors of the next cycle.
func (m *killModel) probed(probes map[string]int64) []string {
	var bad []string
	for num, seq := range probes {
		if seq <= m.maxSeq[num] {
			bad = append(bad, fmt.Sprintf("numbering %s: a new message got %d, at or below %d acknowledged or found", num, seq, m.maxSeq[num]))
		}
		m.floor[num], m.maxSeq[num] = seq, max(seq, m.maxSeq[num])
	}
	return bad
}

// rebuild makes what the check found the model of the next cycle.
func (m *killModel) rebuild(o *killObs) {
	m.items = make(map[string]*killItem, len(o.seen))
	for key, s := range o.seen {
		place := placeAny
		switch s.where {
		case whereDeferred:
			place = placeDeferred
		case whereDeadLetter:
			place = placeDeadLetter
		}
		m.items[key] = &killItem{seq: s.seq, dc: s.dc, place: place, must: true, scheduled: s.where == whereScheduled}
	}
	m.rd, m.state, m.maybe = map[string]int{}, o.states, map[string][]string{}
	m.stats.states += len(o.states)
}
