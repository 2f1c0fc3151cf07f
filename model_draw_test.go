package minibus_test

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

// ---------------------------------------------------------------- drawing

var (
	mEntityNames = []string{"q1", "Q1", "q2", "t1", "T1", "t2", "orders/eu-1.x_y"}
	mSubNames    = []string{"s1", "S1", "s2", "s3"}
	// Rule names are matched case-insensitively too (SEMANTICS V1).
	mRuleNames = []string{"$Default", "$DEFAULT", "r1", "R1", "r2", "a1", "zz"}
)

func drawEntityName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return pick(t, "name", "", "-q", "q-", "q q", "q$", strings.Repeat("q", 261))
	}
	return pick(t, "name", mEntityNames...)
}

func drawSubName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return pick(t, "name", "", "s/1", "$s", strings.Repeat("s", 51))
	}
	return pick(t, "name", mSubNames...)
}

func drawRuleName(t *rapid.T) string {
	if chance(t, "badName", 25) {
		return pick(t, "name", "", "r/1", "$", "r.", strings.Repeat("r", 51))
	}
	return pick(t, "name", mRuleNames...)
}

var (
	lockDurations = []time.Duration{0, 5 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute}
	entityTTLs    = []time.Duration{0, 0, 0, 0, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour, math.MaxInt64}
	idleTimes     = []time.Duration{0, 0, 0, 5 * time.Minute, 10 * time.Minute}
	messageTTLs   = []time.Duration{0, 0, 0, 0, 0, 0, 1, 5 * time.Second, time.Minute, 10 * time.Minute, math.MaxInt64 - 1}
	offsets       = []time.Duration{-time.Minute, 0, 1, 10 * time.Second, time.Minute, 5 * time.Minute, time.Hour}
)

func drawStatus(t *rapid.T) minibus.EntityStatus {
	if chance(t, "statusChange", 10) {
		return pick(t, "status", minibus.EntityStatusDisabled, minibus.EntityStatusSendDisabled, minibus.EntityStatusReceiveDisabled)
	}
	return minibus.EntityStatusActive
}

func drawQueueProps(t *rapid.T) *minibus.QueueProperties {
	if chance(t, "nilProps", 10) {
		return nil
	}
	p := &minibus.QueueProperties{
		LockDuration:                     pick(t, "lock", lockDurations...),
		MaxDeliveryCount:                 int32(between(t, "maxDelivery", 0, 5)),
		DefaultMessageTimeToLive:         pick(t, "ttl", entityTTLs...),
		DeadLetteringOnMessageExpiration: flip(t, "dlOnExpiry"),
		AutoDeleteOnIdle:                 pick(t, "idle", idleTimes...),
		MaxSizeInMegabytes:               pick[int32](t, "maxSize", 0, 0, 0, 1),
		MaxMessageSizeInKilobytes:        pick[int64](t, "maxMsgSize", 0, 0, 0, 1),
		Status:                           drawStatus(t),
	}
	if chance(t, "badProps", 15) {
		switch pick(t, "bad", "lock", "delivery", "ttl", "idle", "session", "dup", "forward", "size", "status") {
		case "lock":
			p.LockDuration = pick(t, "badLock", time.Second, 6*time.Minute, -time.Second)
		case "delivery":
			p.MaxDeliveryCount = -1
		case "ttl":
			p.DefaultMessageTimeToLive = -1
		case "idle":
			p.AutoDeleteOnIdle = pick(t, "badIdle", time.Minute, 5*time.Minute-1, -time.Hour)
		case "session":
			p.RequiresSession = true
		case "dup":
			p.RequiresDuplicateDetection = true
		case "forward":
			p.ForwardTo = "q2"
		case "size":
			p.MaxSizeInMegabytes = -1
		case "status":
			p.Status = 9
		}
	}
	return p
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
		Status:                                    q.Status,
	}
}

func (h *machine) drawMessage(t *rapid.T) *minibus.Message {
	if chance(t, "nilMessage", 60) {
		return nil
	}
	h.bodies++
	body := []byte(fmt.Sprintf("m%d", h.bodies))
	switch pick(t, "size", "small", "small", "small", "small", "small", "small", "small", "small", "1000", "1100") {
	case "1000":
		body = append(body, bytes.Repeat([]byte{'.'}, 1000-len(body))...)
	case "1100":
		body = append(body, bytes.Repeat([]byte{'.'}, 1100-len(body))...)
	}
	msg := &minibus.Message{
		Body:                  body,
		Subject:               pick(t, "subject", "", "", "a", "b"),
		CorrelationID:         pick(t, "correlation", "", "", "c1"),
		ContentType:           pick(t, "contentType", "", "", "text/plain"),
		TimeToLive:            pick(t, "msgTTL", messageTTLs...),
		ApplicationProperties: drawProps(t),
	}
	if chance(t, "msgID", 2) {
		msg.MessageID = fmt.Sprintf("id-%d", h.bodies)
	}
	if chance(t, "moreHeaders", 8) {
		msg.To, msg.ReplyTo, msg.ReplyToSessionID, msg.PartitionKey = "to", "reply", "rs", "pk"
	}
	if chance(t, "scheduled", 5) {
		msg.ScheduledEnqueueTime = tm(h.m.now).Add(pick(t, "offset", offsets...))
	}
	if chance(t, "badMessage", 40) {
		switch pick(t, "bad", "id", "ttl", "prop", "session") {
		case "id":
			msg.MessageID = strings.Repeat("i", 129)
		case "ttl":
			msg.TimeToLive = -1
		case "prop":
			msg.ApplicationProperties = map[string]any{"bad": struct{}{}}
		case "session":
			msg.PartitionKey = strings.Repeat("p", 129)
		}
	}
	return msg
}

// entity draws an instance of the kinds given: mostly a live one, now and
// then a deleted one (its handles must answer ErrNotFound).
func (h *machine) entity(t *rapid.T, kinds ...mKind) *hEnt {
	var live, dead []*hEnt
	for _, he := range h.ents {
		if slices.Contains(kinds, he.m.kind) {
			if he.m.deleted {
				dead = append(dead, he)
			} else {
				live = append(live, he)
			}
		}
	}
	if len(live) == 0 && len(dead) == 0 {
		skip("no entity of that kind")
	}
	if len(dead) > 0 && (len(live) == 0 || chance(t, "deadEntity", 12)) {
		return pick(t, "entity", dead...)
	}
	return pick(t, "entity", live...)
}

// receiver draws a receiver of a queue or subscription: an existing one, or
// a new one.
func (h *machine) receiver(t *rapid.T) *hRecv {
	he := h.entity(t, mQueue, mSub)
	rad := chance(t, "rad", 4)
	dlq := chance(t, "dlq", 3)
	var have []*hRecv
	for _, r := range h.recvs {
		if r.m.e == he.m && r.m.rad == rad && r.m.dlq == dlq && !r.m.closed {
			have = append(have, r)
		}
	}
	if len(have) > 0 && !chance(t, "freshReceiver", 8) {
		return pick(t, "receiver", have...)
	}
	return h.newReceiver(t, he, rad, dlq)
}

func (h *machine) newReceiver(t *rapid.T, he *hEnt, rad, dlq bool) *hRecv {
	opts := &minibus.ReceiverOptions{SubQueue: minibus.SubQueueNone}
	if rad {
		opts.ReceiveMode = minibus.ReceiveModeReceiveAndDelete
	}
	if dlq {
		opts.SubQueue = minibus.SubQueueDeadLetter
	}
	var r *minibus.Receiver
	var err error
	if he.m.kind == mQueue {
		r, err = he.q.NewReceiver(opts)
	} else {
		r, err = he.s.NewReceiver(opts)
	}
	mr, merr := h.m.newReceiver(he.m, rad, dlq)
	h.errs(t, "NewReceiver", err, merr)
	if err != nil {
		skip("no receiver")
	}
	hr := &hRecv{r: r, m: mr}
	h.recvs = append(h.recvs, hr)
	return hr
}
