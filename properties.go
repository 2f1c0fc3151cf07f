package minibus

import (
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus/internal/store"
)

// QueueProperties configures a queue. The zero value of every field means
// "the default"; Properties returns them with the defaults filled in.
type QueueProperties struct {
	// LockDuration is how long a peek-lock holds a message (SEMANTICS L1).
	// Default 1 minute; allowed 5 seconds to 5 minutes.
	LockDuration time.Duration
	// MaxDeliveryCount is how many deliveries a message gets before it is
	// dead-lettered (SEMANTICS L6). Default 10; at least 1.
	MaxDeliveryCount int32
	// DefaultMessageTimeToLive is the time to live of messages sent without
	// one, and the cap of those sent with one (SEMANTICS E1). Default 0:
	// messages never expire. Negative is ErrInvalidArgument.
	DefaultMessageTimeToLive time.Duration
	// DeadLetteringOnMessageExpiration moves expired messages to the
	// dead-letter queue instead of dropping them (SEMANTICS E5). Default
	// false.
	DeadLetteringOnMessageExpiration bool
	// AutoDeleteOnIdle deletes the queue after this long without activity
	// (SEMANTICS A1–A3). Default 0: never; at least 5 minutes.
	AutoDeleteOnIdle time.Duration
	// RequiresSession makes the queue session-aware. Fixed at creation. Not
	// supported yet: true is ErrInvalidArgument.
	RequiresSession bool
	// RequiresDuplicateDetection turns on duplicate detection. Fixed at
	// creation. Not supported yet: true is ErrInvalidArgument.
	RequiresDuplicateDetection bool
	// DuplicateDetectionHistoryTimeWindow is how long message ids are
	// remembered. Default 10 minutes; allowed 20 seconds to 7 days.
	DuplicateDetectionHistoryTimeWindow time.Duration
	// ForwardTo names a queue or topic to forward every message to. Not
	// supported yet: non-empty is ErrInvalidArgument.
	ForwardTo string
	// ForwardDeadLetteredMessagesTo names a queue or topic to forward
	// dead-lettered messages to. Not supported yet: non-empty is
	// ErrInvalidArgument.
	ForwardDeadLetteredMessagesTo string
	// MaxSizeInMegabytes caps the queue's SizeInBytes (SEMANTICS V3).
	// Default 1024; allowed 1 to 81920.
	MaxSizeInMegabytes int32
	// MaxMessageSizeInKilobytes caps one message's size (SEMANTICS V3).
	// Default 256; allowed 1 to 102400.
	MaxMessageSizeInKilobytes int64
	// Status enables or disables sends and receives (SEMANTICS V5). Default
	// EntityStatusActive.
	Status EntityStatus
}

// EntityStatus says which operations an entity accepts (SEMANTICS V5).
type EntityStatus int

const (
	// EntityStatusActive accepts sends and receives. The default.
	EntityStatusActive EntityStatus = iota
	// EntityStatusDisabled refuses sends and receives; messages are kept and
	// time still runs (expiry, scheduling).
	EntityStatusDisabled
	// EntityStatusSendDisabled refuses sends: receive only.
	EntityStatusSendDisabled
	// EntityStatusReceiveDisabled refuses receives and peeks: send only.
	EntityStatusReceiveDisabled
)

func (s EntityStatus) String() string {
	switch s {
	case EntityStatusActive:
		return "Active"
	case EntityStatusDisabled:
		return "Disabled"
	case EntityStatusSendDisabled:
		return "SendDisabled"
	case EntityStatusReceiveDisabled:
		return "ReceiveDisabled"
	}
	return "EntityStatus(" + strconv.Itoa(int(s)) + ")"
}

func (s EntityStatus) canSend() bool {
	return s == EntityStatusActive || s == EntityStatusReceiveDisabled
}

func (s EntityStatus) canReceive() bool {
	return s == EntityStatusActive || s == EntityStatusSendDisabled
}

// Defaults and limits (SEMANTICS V2, A1, V3).
const (
	defaultLockDuration     = time.Minute
	minLockDuration         = 5 * time.Second
	maxLockDuration         = 5 * time.Minute
	defaultMaxDeliveryCount = 10
	minAutoDeleteOnIdle     = 5 * time.Minute
	defaultDupWindow        = 10 * time.Minute
	minDupWindow            = 20 * time.Second
	maxDupWindow            = 7 * 24 * time.Hour
	defaultMaxSizeMB        = 1024
	maxMaxSizeMB            = 81920
	defaultMaxMessageKB     = 256
	maxMaxMessageKB         = 102400
	maxEntityNameLength     = 260
	maxChildNameLength      = 50
)

// withDefaults returns p with every unset field at its default, or an error
// wrapping ErrInvalidArgument naming the first bad field (SEMANTICS V2).
func (p QueueProperties) withDefaults(culprit string) (QueueProperties, error) {
	var err error
	if p.LockDuration, err = checkLockDuration(p.LockDuration, culprit); err != nil {
		return p, err
	}
	if p.MaxDeliveryCount, err = checkMaxDelivery(p.MaxDeliveryCount, culprit); err != nil {
		return p, err
	}
	if err = checkTTL(p.DefaultMessageTimeToLive, culprit); err != nil {
		return p, err
	}
	if err = checkAutoDelete(p.AutoDeleteOnIdle, culprit); err != nil {
		return p, err
	}
	if p.DuplicateDetectionHistoryTimeWindow, err = checkDupWindow(p.DuplicateDetectionHistoryTimeWindow, culprit); err != nil {
		return p, err
	}
	if p.MaxSizeInMegabytes, err = checkMaxSize(p.MaxSizeInMegabytes, culprit); err != nil {
		return p, err
	}
	if p.MaxMessageSizeInKilobytes, err = checkMaxMessageSize(p.MaxMessageSizeInKilobytes, culprit); err != nil {
		return p, err
	}
	if err = checkStatus(p.Status, culprit); err != nil {
		return p, err
	}
	if p.RequiresSession {
		return p, notBuilt(culprit, "RequiresSession (sessions)")
	}
	if p.RequiresDuplicateDetection {
		return p, notBuilt(culprit, "RequiresDuplicateDetection (duplicate detection)")
	}
	if p.ForwardTo != "" {
		return p, notBuilt(culprit, "ForwardTo (auto-forwarding)")
	}
	if p.ForwardDeadLetteredMessagesTo != "" {
		return p, notBuilt(culprit, "ForwardDeadLetteredMessagesTo (auto-forwarding)")
	}
	return p, nil
}

// cfg converts checked properties to the broker's units.
func (p QueueProperties) cfg() cfg {
	return cfg{
		lockDuration:   int64(p.LockDuration),
		maxDelivery:    uint32(p.MaxDeliveryCount),
		ttl:            ttlOrNever(p.DefaultMessageTimeToLive),
		dlOnExpiry:     p.DeadLetteringOnMessageExpiration,
		autoDelete:     ttlOrNever(p.AutoDeleteOnIdle),
		maxSize:        int64(p.MaxSizeInMegabytes) << 20,
		maxMessageSize: p.MaxMessageSizeInKilobytes << 10,
		status:         p.Status,
	}
}

func notBuilt(culprit, what string) error {
	return errorf(ErrInvalidArgument, culprit, "%s is not supported yet", what)
}

func ttlOrNever(d time.Duration) int64 {
	if d == 0 {
		return store.Never
	}
	return int64(d)
}

func checkLockDuration(d time.Duration, culprit string) (time.Duration, error) {
	if d == 0 {
		return defaultLockDuration, nil
	}
	if d < minLockDuration || d > maxLockDuration {
		return d, errorf(ErrInvalidArgument, culprit, "LockDuration %v is outside %v..%v", d, minLockDuration, maxLockDuration)
	}
	return d, nil
}

func checkMaxDelivery(n int32, culprit string) (int32, error) {
	if n == 0 {
		return defaultMaxDeliveryCount, nil
	}
	if n < 1 {
		return n, errorf(ErrInvalidArgument, culprit, "MaxDeliveryCount %d is less than 1", n)
	}
	return n, nil
}

func checkTTL(d time.Duration, culprit string) error {
	if d < 0 {
		return errorf(ErrInvalidArgument, culprit, "DefaultMessageTimeToLive %v is negative", d)
	}
	return nil
}

func checkAutoDelete(d time.Duration, culprit string) error {
	if d != 0 && d < minAutoDeleteOnIdle {
		return errorf(ErrInvalidArgument, culprit, "AutoDeleteOnIdle %v is less than %v", d, minAutoDeleteOnIdle)
	}
	return nil
}

func checkDupWindow(d time.Duration, culprit string) (time.Duration, error) {
	if d == 0 {
		return defaultDupWindow, nil
	}
	if d < minDupWindow || d > maxDupWindow {
		return d, errorf(ErrInvalidArgument, culprit, "DuplicateDetectionHistoryTimeWindow %v is outside %v..%v", d, minDupWindow, maxDupWindow)
	}
	return d, nil
}

func checkMaxSize(mb int32, culprit string) (int32, error) {
	if mb == 0 {
		return defaultMaxSizeMB, nil
	}
	if mb < 1 || mb > maxMaxSizeMB {
		return mb, errorf(ErrInvalidArgument, culprit, "MaxSizeInMegabytes %d is outside 1..%d", mb, maxMaxSizeMB)
	}
	return mb, nil
}

func checkMaxMessageSize(kb int64, culprit string) (int64, error) {
	if kb == 0 {
		return defaultMaxMessageKB, nil
	}
	if kb < 1 || kb > maxMaxMessageKB {
		return kb, errorf(ErrInvalidArgument, culprit, "MaxMessageSizeInKilobytes %d is outside 1..%d", kb, maxMaxMessageKB)
	}
	return kb, nil
}

func checkStatus(s EntityStatus, culprit string) error {
	if s < EntityStatusActive || s > EntityStatusReceiveDisabled {
		return errorf(ErrInvalidArgument, culprit, "Status %v is not a status", s)
	}
	return nil
}

// checkEntityName checks a queue or topic name (SEMANTICS V1): 1–260
// letters, digits, '.', '-', '_' and '/', starting and ending with a letter
// or digit.
func checkEntityName(kind, name string) error {
	return checkName(kind, name, maxEntityNameLength, true, false)
}

// checkChildName checks a subscription or rule name (SEMANTICS V1): 1–50
// characters, no '/'; rule names may start with '$'.
func checkChildName(kind, name string, dollar bool) error {
	return checkName(kind, name, maxChildNameLength, false, dollar)
}

func checkName(kind, name string, maxLen int, slash, dollar bool) error {
	culprit := kind + " name " + strconv.Quote(name)
	if name == "" {
		return errorf(ErrInvalidArgument, kind+" name", "empty")
	}
	if len(name) > maxLen {
		return errorf(ErrInvalidArgument, culprit, "longer than %d characters", maxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isAlnum(c):
		case c == '.' || c == '-' || c == '_':
		case c == '/' && slash:
		case c == '$' && dollar && i == 0:
		default:
			return errorf(ErrInvalidArgument, culprit, "character %q at %d is not allowed", c, i)
		}
	}
	first := name[0]
	if !isAlnum(first) && !(dollar && first == '$') {
		return errorf(ErrInvalidArgument, culprit, "must start with a letter or digit")
	}
	if !isAlnum(name[len(name)-1]) {
		return errorf(ErrInvalidArgument, culprit, "must end with a letter or digit")
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// nameKey is the case-insensitive key of a name (SEMANTICS V1).
func nameKey(name string) string { return strings.ToLower(name) }

// TopicProperties configures a topic. The zero value of every field means
// "the default"; Properties returns them with the defaults filled in.
type TopicProperties struct {
	// DefaultMessageTimeToLive caps the time to live of every copy in the
	// topic's subscriptions, with the subscription's own (SEMANTICS E1).
	// Default 0: no cap.
	DefaultMessageTimeToLive time.Duration
	// AutoDeleteOnIdle deletes the topic, and its subscriptions, after this
	// long without activity on it or any subscription (SEMANTICS A2, A5).
	// Default 0: never; at least 5 minutes.
	AutoDeleteOnIdle time.Duration
	// RequiresDuplicateDetection turns on duplicate detection. Not supported
	// yet: true is ErrInvalidArgument.
	RequiresDuplicateDetection bool
	// DuplicateDetectionHistoryTimeWindow: default 10 minutes; allowed 20
	// seconds to 7 days.
	DuplicateDetectionHistoryTimeWindow time.Duration
	// MaxSizeInMegabytes caps the topic's SizeInBytes: its scheduled messages
	// and every subscription's messages. Default 1024.
	MaxSizeInMegabytes int32
	// MaxMessageSizeInKilobytes caps one message's size. Default 256.
	MaxMessageSizeInKilobytes int64
	// Status: Disabled and SendDisabled refuse sends (SEMANTICS V5). Default
	// EntityStatusActive.
	Status EntityStatus
}

func (p TopicProperties) withDefaults(culprit string) (TopicProperties, error) {
	var err error
	if err = checkTTL(p.DefaultMessageTimeToLive, culprit); err != nil {
		return p, err
	}
	if err = checkAutoDelete(p.AutoDeleteOnIdle, culprit); err != nil {
		return p, err
	}
	if p.DuplicateDetectionHistoryTimeWindow, err = checkDupWindow(p.DuplicateDetectionHistoryTimeWindow, culprit); err != nil {
		return p, err
	}
	if p.MaxSizeInMegabytes, err = checkMaxSize(p.MaxSizeInMegabytes, culprit); err != nil {
		return p, err
	}
	if p.MaxMessageSizeInKilobytes, err = checkMaxMessageSize(p.MaxMessageSizeInKilobytes, culprit); err != nil {
		return p, err
	}
	if err = checkStatus(p.Status, culprit); err != nil {
		return p, err
	}
	if p.RequiresDuplicateDetection {
		return p, notBuilt(culprit, "RequiresDuplicateDetection (duplicate detection)")
	}
	return p, nil
}

func (p TopicProperties) cfg() cfg {
	return cfg{
		ttl:            ttlOrNever(p.DefaultMessageTimeToLive),
		autoDelete:     ttlOrNever(p.AutoDeleteOnIdle),
		maxSize:        int64(p.MaxSizeInMegabytes) << 20,
		maxMessageSize: p.MaxMessageSizeInKilobytes << 10,
		status:         p.Status,
	}
}

// SubscriptionProperties configures a subscription. The zero value of every
// field means "the default"; Properties returns them with the defaults
// filled in.
type SubscriptionProperties struct {
	// LockDuration: default 1 minute; allowed 5 seconds to 5 minutes.
	LockDuration time.Duration
	// MaxDeliveryCount: default 10; at least 1.
	MaxDeliveryCount int32
	// DefaultMessageTimeToLive: default 0, no TTL of its own; the topic's
	// caps it too (SEMANTICS E1).
	DefaultMessageTimeToLive time.Duration
	// DeadLetteringOnMessageExpiration moves expired messages to the
	// dead-letter queue (SEMANTICS E5). Default false.
	DeadLetteringOnMessageExpiration bool
	// DeadLetteringOnFilterEvaluationExceptions sends a copy to the
	// dead-letter queue when a rule fails to evaluate; otherwise that rule
	// does not match (SEMANTICS R5). Default false.
	DeadLetteringOnFilterEvaluationExceptions bool
	// AutoDeleteOnIdle: default 0, never; at least 5 minutes.
	AutoDeleteOnIdle time.Duration
	// RequiresSession: not supported yet, true is ErrInvalidArgument.
	RequiresSession bool
	// ForwardTo: not supported yet, non-empty is ErrInvalidArgument.
	ForwardTo string
	// ForwardDeadLetteredMessagesTo: not supported yet, non-empty is
	// ErrInvalidArgument.
	ForwardDeadLetteredMessagesTo string
	// DefaultRule replaces the "$Default" rule (a TrueFilter) at creation;
	// its Name defaults to "$Default". UpdateSubscription ignores it: change
	// rules with CreateRule and DeleteRule.
	DefaultRule *RuleProperties
	// Status: Disabled and ReceiveDisabled refuse receives; Disabled and
	// SendDisabled make the topic skip the subscription, which then gets no
	// copies (SEMANTICS V5). Default EntityStatusActive.
	Status EntityStatus
}

func (p SubscriptionProperties) withDefaults(culprit string) (SubscriptionProperties, error) {
	var err error
	if p.LockDuration, err = checkLockDuration(p.LockDuration, culprit); err != nil {
		return p, err
	}
	if p.MaxDeliveryCount, err = checkMaxDelivery(p.MaxDeliveryCount, culprit); err != nil {
		return p, err
	}
	if err = checkTTL(p.DefaultMessageTimeToLive, culprit); err != nil {
		return p, err
	}
	if err = checkAutoDelete(p.AutoDeleteOnIdle, culprit); err != nil {
		return p, err
	}
	if err = checkStatus(p.Status, culprit); err != nil {
		return p, err
	}
	if p.RequiresSession {
		return p, notBuilt(culprit, "RequiresSession (sessions)")
	}
	if p.ForwardTo != "" {
		return p, notBuilt(culprit, "ForwardTo (auto-forwarding)")
	}
	if p.ForwardDeadLetteredMessagesTo != "" {
		return p, notBuilt(culprit, "ForwardDeadLetteredMessagesTo (auto-forwarding)")
	}
	return p, nil
}

func (p SubscriptionProperties) cfg() cfg {
	return cfg{
		lockDuration:    int64(p.LockDuration),
		maxDelivery:     uint32(p.MaxDeliveryCount),
		ttl:             ttlOrNever(p.DefaultMessageTimeToLive),
		dlOnExpiry:      p.DeadLetteringOnMessageExpiration,
		dlOnFilterError: p.DeadLetteringOnFilterEvaluationExceptions,
		autoDelete:      ttlOrNever(p.AutoDeleteOnIdle),
		maxSize:         store.Never,
		maxMessageSize:  store.Never,
		status:          p.Status,
	}
}
