package modeltest

// Drawing the names, properties and messages the actions use, and the
// entities and receivers they act on.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// drawProps draws application properties over the names the rules read,
// with values of every type the rules treat differently.
func drawProps(t *rapid.T) map[string]any {
	p := map[string]any{}
	if chance(t, "hasN", 2) {
		p["n"] = Pick[any](t, "n", 0, 1, 2, 3, 4, int64(3), 2.5, "3", true, nil, int32(1))
	}
	if chance(t, "hasBigN", 8) {
		p["N"] = Pick[any](t, "N", 1, 9)
	}
	if chance(t, "hasColor", 2) {
		p["color"] = Pick[any](t, "color", "red", "blue", "red", 7, nil, false)
	}
	if chance(t, "hasX", 4) {
		p["x"] = true
	}
	if chance(t, "hasTag", 5) {
		p["tag"] = "t"
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

var (
	mEntityNames = []string{"q1", "Q1", "q2", "t1", "T1", "t2", "orders/eu-1.x_y"}
	mSubNames    = []string{"s1", "S1", "s2", "s3"}
	// Rule names are matched case-insensitively too (SEMANTICS V1).
	mRuleNames = []string{"$Default", "$DEFAULT", "r1", "R1", "r2", "a1", "zz"}
	// Session ids and the MessageIDs messages share, for duplicates.
	mSessionIDs = []string{"a", "b", "c"}
	mSharedIDs  = []string{"dup-1", "dup-2", "dup-3"}
)

func drawEntityName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return Pick(t, "name", "", "-q", "q-", "q q", "q$", strings.Repeat("q", 261))
	}
	return Pick(t, "name", mEntityNames...)
}

func drawSubName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return Pick(t, "name", "", "s/1", "$s", strings.Repeat("s", 51))
	}
	return Pick(t, "name", mSubNames...)
}

func drawRuleName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return Pick(t, "name", "", "r/1", "$", "r.", strings.Repeat("r", 51))
	}
	return Pick(t, "name", mRuleNames...)
}

// drawForwardName draws a ForwardTo: mostly a name the entities use, which
// may or may not exist now (F1).
func drawForwardName(t *rapid.T) string {
	return Pick(t, "forwardTo", append(slices.Clone(mEntityNames), "q2", "t1", "nope")...)
}

var (
	lockDurations = []time.Duration{0, 5 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute}
	entityTTLs    = []time.Duration{0, 0, 0, 0, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour, math.MaxInt64}
	idleTimes     = []time.Duration{0, 0, 0, 5 * time.Minute, 10 * time.Minute}
	messageTTLs   = []time.Duration{0, 0, 0, 0, 0, 0, 1, 5 * time.Second, time.Minute, 10 * time.Minute, math.MaxInt64 - 1}
	offsets       = []time.Duration{-time.Minute, 0, 1, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour}
	dupWindows    = []time.Duration{0, 20 * time.Second, time.Minute, 10 * time.Minute}
)

func drawStatus(t *rapid.T) minibus.EntityStatus {
	if chance(t, "statusChange", 10) {
		return Pick(t, "status", minibus.EntityStatusDisabled, minibus.EntityStatusSendDisabled, minibus.EntityStatusReceiveDisabled)
	}
	return minibus.EntityStatusActive
}

func drawQueueProps(t *rapid.T) *minibus.QueueProperties {
	if chance(t, "nilProps", 10) {
		return nil
	}
	p := &minibus.QueueProperties{
		LockDuration:                     Pick(t, "lock", lockDurations...),
		MaxDeliveryCount:                 int32(Between(t, "maxDelivery", 0, 5)),
		DefaultMessageTimeToLive:         Pick(t, "ttl", entityTTLs...),
		DeadLetteringOnMessageExpiration: flip(t, "dlOnExpiry"),
		AutoDeleteOnIdle:                 Pick(t, "idle", idleTimes...),
		MaxSizeInMegabytes:               Pick[int32](t, "maxSize", 0, 0, 0, 1),
		MaxMessageSizeInKilobytes:        Pick[int64](t, "maxMsgSize", 0, 0, 0, 1),
		Status:                           drawStatus(t),
	}
	drawFeatures(t, p)
	if chance(t, "badProps", 15) {
		drawBadProps(t, p)
	}
	return p
}

// drawFeatures draws sessions (SS1), duplicate detection (DD1) and
// forwarding (F1, D4).
func drawFeatures(t *rapid.T, p *minibus.QueueProperties) {
	p.RequiresSession = chance(t, "session", 5)
	if chance(t, "dupDetect", 4) {
		p.RequiresDuplicateDetection = true
		p.DuplicateDetectionHistoryTimeWindow = Pick(t, "dupWindow", dupWindows...)
	}
	if chance(t, "forward", 5) {
		p.ForwardTo = drawForwardName(t)
	}
	if chance(t, "forwardDL", 5) {
		p.ForwardDeadLetteredMessagesTo = drawForwardName(t)
	}
}

func drawBadProps(t *rapid.T, p *minibus.QueueProperties) {
	switch Pick(t, "bad", "lock", "delivery", "ttl", "idle", "size", "status", "window") {
	case "lock":
		p.LockDuration = Pick(t, "badLock", time.Second, 6*time.Minute, -time.Second)
	case "delivery":
		p.MaxDeliveryCount = -1
	case "ttl":
		p.DefaultMessageTimeToLive = -1
	case "idle":
		p.AutoDeleteOnIdle = Pick(t, "badIdle", time.Minute, 5*time.Minute-1, -time.Hour)
	case "size":
		p.MaxSizeInMegabytes = -1
	case "status":
		p.Status = 9
	case "window":
		p.DuplicateDetectionHistoryTimeWindow = Pick(t, "badWindow", 20*time.Second-1, 7*24*time.Hour+1)
	}
}

func drawTopicProps(t *rapid.T) *minibus.TopicProperties {
	q := drawQueueProps(t)
	if q == nil {
		return nil
	}
	return &minibus.TopicProperties{
		DefaultMessageTimeToLive:            q.DefaultMessageTimeToLive,
		AutoDeleteOnIdle:                    q.AutoDeleteOnIdle,
		RequiresDuplicateDetection:          q.RequiresDuplicateDetection,
		DuplicateDetectionHistoryTimeWindow: q.DuplicateDetectionHistoryTimeWindow,
		MaxSizeInMegabytes:                  q.MaxSizeInMegabytes,
		MaxMessageSizeInKilobytes:           q.MaxMessageSizeInKilobytes,
		Status:                              q.Status,
	}
}

func drawSubProps(t *rapid.T) *minibus.SubscriptionProperties {
	q := drawQueueProps(t)
	if q == nil {
		return nil
	}
	return &minibus.SubscriptionProperties{
		LockDuration:                              q.LockDuration,
		MaxDeliveryCount:                          q.MaxDeliveryCount,
		DefaultMessageTimeToLive:                  q.DefaultMessageTimeToLive,
		DeadLetteringOnMessageExpiration:          q.DeadLetteringOnMessageExpiration,
		DeadLetteringOnFilterEvaluationExceptions: flip(t, "dlOnFilter"),
		AutoDeleteOnIdle:                          q.AutoDeleteOnIdle,
		RequiresSession:                           q.RequiresSession,
		ForwardTo:                                 q.ForwardTo,
		ForwardDeadLetteredMessagesTo:             q.ForwardDeadLetteredMessagesTo,
		Status:                                    q.Status,
	}
}

// drawMessage draws a message; sessions says how likely it is to need a
// SessionID: 0 not much, 1 for a topic, 2 for a session-enabled entity.
func (h *machine) drawMessage(t *rapid.T, sessions int) *minibus.Message {
	if chance(t, "nilMessage", 60) {
		return nil
	}
	h.bodies++
	body := []byte(fmt.Sprintf("m%d", h.bodies))
	switch Pick(t, "size", "small", "small", "small", "small", "small", "small", "small", "small", "1000", "1100") {
	case "1000":
		body = append(body, bytes.Repeat([]byte{'.'}, 1000-len(body))...)
	case "1100":
		body = append(body, bytes.Repeat([]byte{'.'}, 1100-len(body))...)
	}
	msg := &minibus.Message{
		Body:                  body,
		Subject:               Pick(t, "subject", "", "", "a", "b"),
		CorrelationID:         Pick(t, "correlation", "", "", "c1"),
		ContentType:           Pick(t, "contentType", "", "", "text/plain"),
		TimeToLive:            Pick(t, "msgTTL", messageTTLs...),
		ApplicationProperties: drawProps(t),
	}
	h.drawIDs(t, msg, sessions)
	if chance(t, "moreHeaders", 8) {
		msg.To, msg.ReplyTo, msg.ReplyToSessionID, msg.PartitionKey = "to", "reply", "rs", "pk"
	}
	if chance(t, "scheduled", 5) {
		msg.ScheduledEnqueueTime = tm(h.m.now).Add(Pick(t, "offset", offsets...))
	}
	if chance(t, "badMessage", 40) {
		drawBadMessage(t, msg)
	}
	return msg
}

// drawIDs draws the MessageID (unique, or one of a few shared ones, for
// duplicate detection) and the SessionID.
func (h *machine) drawIDs(t *rapid.T, msg *minibus.Message, sessions int) {
	if chance(t, "msgID", 2) {
		msg.MessageID = fmt.Sprintf("id-%d", h.bodies)
		if chance(t, "sharedID", 2) {
			msg.MessageID = Pick(t, "shared", mSharedIDs...)
		}
	}
	odds := [...]int{6, 2, 1}[sessions]
	if uniform(t, "sessionID", 8) >= odds {
		return
	}
	msg.SessionID = Pick(t, "session", mSessionIDs...)
}

func drawBadMessage(t *rapid.T, msg *minibus.Message) {
	switch Pick(t, "bad", "id", "ttl", "prop", "partition", "session") {
	case "id":
		msg.MessageID = strings.Repeat("i", 129)
	case "ttl":
		msg.TimeToLive = -1
	case "prop":
		msg.ApplicationProperties = map[string]any{"bad": struct{}{}}
	case "partition":
		msg.PartitionKey = strings.Repeat("p", 129)
	case "session":
		msg.SessionID = strings.Repeat("s", 129)
	}
}

// entity draws an instance of the kinds given: mostly a live one, now and
// then a deleted one (its handles must answer ErrNotFound).
func (h *machine) entity(t *rapid.T, kinds ...mKind) *hEnt {
	return h.entityWhere(t, func(he *hEnt) bool { return slices.Contains(kinds, he.m.kind) })
}

// entityWhere draws an instance that has the property: mostly a live one.
func (h *machine) entityWhere(t *rapid.T, ok func(*hEnt) bool) *hEnt {
	var live, dead []*hEnt
	for _, he := range h.ents {
		switch {
		case !ok(he) || he.stale:
		case he.m.deleted:
			dead = append(dead, he)
		default:
			live = append(live, he)
		}
	}
	if len(live) == 0 && len(dead) == 0 {
		skip("no entity of that kind")
	}
	if len(dead) > 0 && (len(live) == 0 || chance(t, "deadEntity", 12)) {
		return Pick(t, "entity", dead...)
	}
	return Pick(t, "entity", live...)
}

// sessionEntity draws a queue or subscription, mostly a session-enabled
// one.
func (h *machine) sessionEntity(t *rapid.T) *hEnt {
	if chance(t, "anyEntity", 8) {
		return h.entity(t, mQueue, mSub)
	}
	return h.entityWhere(t, func(he *hEnt) bool { return he.m.kind != mTopic && he.m.cfg.session })
}

// drawSubQueue draws the sub-queue a plain receiver reads.
func drawSubQueue(t *rapid.T) subQ {
	switch uniform(t, "subQueue", 12) {
	case 0, 1, 2, 3:
		return sqDLQ
	case 4:
		return sqTransfer
	}
	return sqMain
}

// receiver draws a plain receiver of a queue or subscription: an existing
// one, or a new one.
func (h *machine) receiver(t *rapid.T) *hRecv {
	he := h.entity(t, mQueue, mSub)
	rad := chance(t, "rad", 4)
	q := drawSubQueue(t)
	var have []*hRecv
	for _, r := range h.recvs {
		if r.sess == nil && r.m.e == he.m && r.m.rad == rad && r.m.q == q && !r.m.closed {
			have = append(have, r)
		}
	}
	if len(have) > 0 && !chance(t, "freshReceiver", 8) {
		return Pick(t, "receiver", have...)
	}
	return h.newReceiver(t, he, rad, q)
}

// anyReceiver draws a receiver, plain or of a session.
func (h *machine) anyReceiver(t *rapid.T) *hRecv {
	var sess []*hRecv
	for _, r := range h.recvs {
		if r.sess != nil {
			sess = append(sess, r)
		}
	}
	if len(sess) > 0 && chance(t, "sessionReceiver", 3) {
		return Pick(t, "receiver", sess...)
	}
	return h.receiver(t)
}

func newReceiverOptions(rad bool, q subQ) *minibus.ReceiverOptions {
	opts := &minibus.ReceiverOptions{SubQueue: q.public()}
	if rad {
		opts.ReceiveMode = minibus.ReceiveModeReceiveAndDelete
	}
	return opts
}

func (h *machine) newReceiver(t *rapid.T, he *hEnt, rad bool, q subQ) *hRecv {
	opts := newReceiverOptions(rad, q)
	var r *minibus.Receiver
	var err error
	if he.m.kind == mQueue {
		r, err = he.q.NewReceiver(opts)
	} else {
		r, err = he.s.NewReceiver(opts)
	}
	mr, merr := h.m.newReceiver(he.m, rad, q)
	h.errs(t, fmt.Sprintf("NewReceiver(%v) on %v", q, he.m), err, merr)
	if err != nil {
		skip("no receiver")
	}
	hr := &hRecv{r: r, m: mr}
	h.recvs = append(h.recvs, hr)
	return hr
}
