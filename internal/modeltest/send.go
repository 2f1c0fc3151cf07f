package modeltest

// The model's sending side: sizes, sends and schedules with duplicate
// detection, fan-out to subscriptions, cancellation.

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

// mMessageSize is the size counted against the limits (SEMANTICS V3): the
// body, the string properties and the application properties' keys and
// values, as the broker documents it.
func mMessageSize(body []byte, msgID string, h mHeaders, props map[string]any) int64 {
	n := int64(len(body) + len(msgID))
	n += int64(len(h.ContentType) + len(h.CorrelationID) + len(h.Subject) + len(h.To) +
		len(h.ReplyTo) + len(h.ReplyToSessionID) + len(h.PartitionKey) + len(h.SessionID))
	for k, v := range props {
		n += int64(len(k)) + valueSize(v)
	}
	return n
}

func valueSize(v any) int64 {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(v))
	case []byte:
		return int64(len(v))
	case bool, int8, uint8:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32, float32:
		return 4
	}
	return 8
}

// MessageSize is the size SEMANTICS V3 counts against
// MaxMessageSizeInKilobytes and the entity's quota, as the model computes
// it, for a message with a body, a MessageID and application properties
// and no other header.
func MessageSize(body []byte, msgID string, props map[string]any) int64 {
	return mMessageSize(body, msgID, mHeaders{}, props)
}

func (x *mMsg) resize() {
	id := x.msgID
	if id == "" {
		id = strings.Repeat("0", 32) // the broker's random ids are 32 characters
	}
	x.size = mMessageSize(x.body, id, x.headers, x.props)
}

func validValue(v any) bool {
	switch v.(type) {
	case nil, string, bool, []byte, time.Time, time.Duration,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

func copyMap(p map[string]any) map[string]any {
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		if b, ok := v.([]byte); ok {
			v = slices.Clone(b)
		}
		out[k] = v
	}
	return out
}

// effTTL is SEMANTICS E1: the smallest of the message's TTL (if set) and the
// cap, 0 standing for "not set" in both and in the result for "none".
func effTTL(sent, cap int64) int64 {
	if sent > 0 && (cap == 0 || sent < cap) {
		return sent
	}
	return cap
}

// capTTL is the smaller of two caps on TTL, 0 standing for none.
func capTTL(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// ttlCap is what caps the TTL of a message enqueued in e (E1): its own
// DefaultMessageTimeToLive, and for a subscription its topic's too.
func ttlCap(e *mEntity) int64 {
	if e.kind == mSub {
		return capTTL(e.cfg.ttl, e.topic.cfg.ttl)
	}
	return e.cfg.ttl
}

// record validates a message to send and makes the model's copy of it.
func (m *refModel) record(msg *minibus.Message) (*mMsg, error) {
	if msg == nil || len(msg.MessageID) > 128 || len(msg.SessionID) > 128 || len(msg.PartitionKey) > 128 || msg.TimeToLive < 0 {
		return nil, minibus.ErrInvalidArgument
	}
	for _, v := range msg.ApplicationProperties {
		if !validValue(v) {
			return nil, minibus.ErrInvalidArgument
		}
	}
	x := &mMsg{
		body:  slices.Clone(msg.Body),
		msgID: msg.MessageID,
		headers: mHeaders{ContentType: msg.ContentType, CorrelationID: msg.CorrelationID, Subject: msg.Subject,
			To: msg.To, ReplyTo: msg.ReplyTo, ReplyToSessionID: msg.ReplyToSessionID, PartitionKey: msg.PartitionKey,
			SessionID: msg.SessionID},
		props:   copyMap(msg.ApplicationProperties),
		sentTTL: int64(msg.TimeToLive),
		sched:   mUnset,
		expires: mNever,
	}
	if !msg.ScheduledEnqueueTime.IsZero() {
		x.sched = mInstant(msg.ScheduledEnqueueTime)
	}
	x.resize()
	return x, nil
}

// records validates a batch: not empty, every message valid. at is the
// ScheduleMessages instant, or mUnset.
func (m *refModel) records(msgs []*minibus.Message, at int64) ([]*mMsg, error) {
	if len(msgs) == 0 {
		return nil, minibus.ErrInvalidArgument
	}
	recs := make([]*mMsg, len(msgs))
	for i, msg := range msgs {
		x, err := m.record(msg)
		if err != nil {
			return nil, err
		}
		if at != mUnset {
			x.sched = at
		}
		recs[i] = x
	}
	return recs, nil
}

// sendResult is what a send did: the numbers (0 for a dropped duplicate)
// and the duplicates it dropped.
type sendResult struct {
	seqs             []int64
	dupHist, dupBtch int
}

// send is SendMessages (at == mUnset) and ScheduleMessages (at the
// schedule instant): all or nothing (SEMANTICS V3), duplicates dropped
// (DD1).
func (m *refModel) send(e *mEntity, msgs []*minibus.Message, at int64) (sendResult, error) {
	m.begin()
	recs, err := m.records(msgs, at)
	if err != nil {
		return sendResult{}, err
	}
	if err := m.checkSend(e, recs); err != nil {
		return sendResult{}, err
	}
	kept, res := m.dedup(e, recs, m.now)
	if err := m.checkQuota(e, recs, kept); err != nil {
		return sendResult{}, err
	}
	res.seqs = m.accept(e, recs, kept)
	m.hits.DuplicateDropped += res.dupHist
	m.hits.DuplicateBatch += res.dupBtch
	m.touch(e)
	e.accessed = m.now
	m.flush()
	return res, nil
}

// checkSend is the checks of a send that need the entity: it exists, its
// status takes sends (V5), each message fits (V3) and has a SessionID when
// the entity requires sessions (SS1), in message order.
func (m *refModel) checkSend(e *mEntity, recs []*mMsg) error {
	if e.deleted {
		return minibus.ErrNotFound
	}
	if !canSend(e.cfg.status) {
		return minibus.ErrEntityDisabled
	}
	for _, x := range recs {
		if x.size > e.cfg.maxMsgSize {
			m.hits.TooLarge++
			return minibus.ErrMessageTooLarge
		}
		if e.cfg.session && x.headers.SessionID == "" {
			return minibus.ErrInvalidArgument
		}
	}
	return nil
}

// dupKey is the id duplicate detection compares: the MessageID as sent,
// else the broker's random one, which every copy and forward of the
// message shares (DD2).
func dupKey(x *mMsg) string {
	if x.msgID != "" {
		return x.msgID
	}
	return "\x00random id of item " + strconv.Itoa(x.origin)
}

// dupSeen reports whether e accepted key within its window before at (DD1,
// T2: at the window's end a resend is new).
func dupSeen(e *mEntity, key string, at int64) bool {
	u, ok := e.dups[key]
	return e.cfg.dupDetect && ok && at < u
}

// recordDup remembers key, accepted by e at instant at, for its window.
func (m *refModel) recordDup(e *mEntity, key string, at int64) {
	if !e.cfg.dupDetect {
		return
	}
	e.dups[key] = mAddSat(at, e.cfg.dupWindow)
}

// dedup marks which of recs e keeps: not those whose MessageID it accepted
// within its window, nor a repeat of an earlier message of the batch (DD1).
// A message without MessageID gets a random one, never a duplicate.
func (m *refModel) dedup(e *mEntity, recs []*mMsg, at int64) ([]bool, sendResult) {
	kept := make([]bool, len(recs))
	var res sendResult
	batch := map[string]bool{}
	for i, x := range recs {
		id := x.msgID
		switch {
		case !e.cfg.dupDetect || id == "":
			kept[i] = true
		case dupSeen(e, id, at):
			res.dupHist++
		case batch[id]:
			res.dupBtch++
		default:
			kept[i] = true
			batch[id] = true
		}
	}
	return kept, res
}

// future reports whether x, sent now, is scheduled for later (S1).
func (m *refModel) future(x *mMsg) bool { return x.sched != mUnset && x.sched > m.now }

// checkQuota checks the kept messages against e's quota (V3). A topic
// counts the copies its subscriptions' rules would make now; a message
// scheduled for later counts as those copies or as itself, whichever is
// more, as it waits in the topic.
func (m *refModel) checkQuota(e *mEntity, recs []*mMsg, kept []bool) error {
	var total int64
	n := 0
	for i, x := range recs {
		if !kept[i] {
			continue
		}
		n++
		if e.kind != mTopic {
			total += x.size
			continue
		}
		x.key = mKey{seq: e.seq + int64(n)}
		copies := m.planSize(e, x, m.now)
		if m.future(x) {
			copies = max(copies, x.size)
		}
		total += copies
	}
	used := m.entitySize(e)
	if e.kind == mTopic {
		used = m.topicSize(e)
	}
	if used+total > e.cfg.maxSize {
		m.hits.QuotaExceeded++
		return minibus.ErrQuotaExceeded
	}
	return nil
}

// accept numbers and enqueues, schedules or fans out the kept messages of a
// send, and records their ids (Q1, S1, R1, DD1). A dropped duplicate is
// accepted and ends at once, with number 0.
func (m *refModel) accept(e *mEntity, recs []*mMsg, kept []bool) []int64 {
	seqs := make([]int64, len(recs))
	for i, x := range recs {
		x.item = m.newItem(e.kind.String() + " message")
		x.origin = x.item
		if !kept[i] {
			m.terminate(x.item, termDuplicate)
			continue
		}
		e.seq++
		e.seqLog = append(e.seqLog, x.item)
		seqs[i] = e.seq
		x.key = mKey{seq: e.seq}
		m.recordDup(e, dupKey(x), m.now)
		switch {
		case m.future(x):
			x.state = mScheduled
			x.enqueued = x.sched
			insert(&e.main, x)
		case e.kind == mTopic:
			m.fanOut(e, x, m.now)
		default:
			m.enqueue(e, x, m.now, e.cfg.ttl)
		}
	}
	return seqs
}

// enqueue makes x available in e's main queue at instant at (SEMANTICS Q3,
// E1, E2); a forwarding entity passes it on at once (F2).
func (m *refModel) enqueue(e *mEntity, x *mMsg, at, cap int64) {
	if e.cfg.forwardTo != "" {
		m.forwardOut(e, x, at)
		return
	}
	m.stampAt(e, x, at, cap)
	x.q = sqMain
	x.state = mAvail
	insert(&e.main, x)
}

// stampAt sets what enqueueing x in e at instant at with this cap makes of
// it: EnqueuedTime (Q3), its effective TTL (E1) and ExpiresAt (E2).
func (m *refModel) stampAt(e *mEntity, x *mMsg, at, cap int64) {
	eff := effTTL(x.carriedTTL(), cap)
	x.enqueued = at
	x.expires = mExpiry(at, eff)
	x.ttl = eff
	x.stamped = true
	x.home = e
}

// entitySize is e's SizeInBytes: its messages' sizes and its session
// states' lengths (SEMANTICS L13, SS9).
func (m *refModel) entitySize(e *mEntity) int64 {
	var n int64
	for _, l := range e.lists() {
		for _, x := range l {
			n += x.size
		}
	}
	for _, st := range e.state {
		n += int64(len(st))
	}
	return n
}

func (m *refModel) topicSize(t *mEntity) int64 {
	n := m.entitySize(t)
	for _, s := range t.subs {
		n += m.entitySize(s)
	}
	return n
}

func (m *refModel) cancel(e *mEntity, seqs []int64) error {
	m.begin()
	if err := checkSeqs(seqs); err != nil {
		return err
	}
	if e.deleted {
		return minibus.ErrNotFound
	}
	if !canSend(e.cfg.status) {
		return minibus.ErrEntityDisabled
	}
	var found []*mMsg
	for _, s := range seqs {
		i := slices.IndexFunc(e.main, func(x *mMsg) bool { return x.key == mKey{seq: s} && x.state == mScheduled })
		if i < 0 {
			return minibus.ErrMessageNotFound
		}
		found = append(found, e.main[i])
	}
	for _, x := range found {
		remove(&e.main, x)
		m.terminate(x.item, termCancelled)
		m.hits.Cancel++
	}
	m.touch(e)
	return nil
}

func checkSeqs(seqs []int64) error {
	if len(seqs) == 0 {
		return minibus.ErrInvalidArgument
	}
	for i, s := range seqs {
		if s < 1 || slices.Contains(seqs[:i], s) {
			return minibus.ErrInvalidArgument
		}
	}
	return nil
}
