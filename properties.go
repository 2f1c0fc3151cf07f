package minibus

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/minibus-go/minibus/internal/engine"
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
	// RequiresSession makes the queue session-aware: every message needs a
	// SessionID and is received through AcceptSession or AcceptNextSession
	// (SEMANTICS SS1). Fixed at creation (V2).
	RequiresSession bool
	// RequiresDuplicateDetection drops a message whose MessageID the queue
	// accepted within DuplicateDetectionHistoryTimeWindow; the send reports
	// success (SEMANTICS DD1). Fixed at creation (V2).
	RequiresDuplicateDetection bool
	// DuplicateDetectionHistoryTimeWindow is how long message ids are
	// remembered. Default 10 minutes; allowed 20 seconds to 7 days.
	DuplicateDetectionHistoryTimeWindow time.Duration
	// ForwardTo names a queue or topic of the namespace, other than the
	// queue itself, to which every message moves as soon as it is active;
	// the queue then cannot be received from and is never idle (SEMANTICS
	// F1–F3, A4). A session-enabled queue cannot forward. Default "": none.
	ForwardTo string
	// ForwardDeadLetteredMessagesTo names a queue or topic to which
	// dead-lettered messages move instead of the dead-letter queue, with
	// DeadLetterSource set (SEMANTICS D4). Default "": none.
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
	// RequiresDuplicateDetection drops a message whose MessageID the topic
	// accepted within DuplicateDetectionHistoryTimeWindow, before any
	// subscription sees it (SEMANTICS DD1). Fixed at creation (V2).
	RequiresDuplicateDetection bool
	// DuplicateDetectionHistoryTimeWindow: default 10 minutes; allowed 20
	// seconds to 7 days.
	DuplicateDetectionHistoryTimeWindow time.Duration
	// MaxSizeInMegabytes caps the topic's SizeInBytes: its scheduled messages
	// and every subscription's messages and session states (SEMANTICS SS9).
	// Default 1024.
	MaxSizeInMegabytes int32
	// MaxMessageSizeInKilobytes caps one message's size. Default 256.
	MaxMessageSizeInKilobytes int64
	// Status: Disabled and SendDisabled refuse sends (SEMANTICS V5). Default
	// EntityStatusActive.
	Status EntityStatus
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
	// RequiresSession makes the subscription session-aware (SEMANTICS SS1):
	// a topic message without SessionID goes to its dead-letter queue.
	// Fixed at creation (V2).
	RequiresSession bool
	// ForwardTo names a queue or topic to which every copy the subscription
	// gets moves at once (SEMANTICS F1–F3). Default "": none.
	ForwardTo string
	// ForwardDeadLetteredMessagesTo names a queue or topic to which
	// dead-lettered copies move (SEMANTICS D4). Default "": none.
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
	if s < EntityStatusActive || s > EntityStatusReceiveDisabled {
		return "EntityStatus(" + strconv.Itoa(int(s)) + ")"
	}
	return engine.Status(s).String() // the same values (TestEnumsMirror)
}

// The conversions between the public properties and the engine's Config:
// one each way per kind. Config keeps the public units.

func (p QueueProperties) config() engine.Config {
	return engine.Config{
		LockDuration: p.LockDuration, MaxDeliveryCount: p.MaxDeliveryCount, TTL: p.DefaultMessageTimeToLive,
		DeadLetterOnExpiry: p.DeadLetteringOnMessageExpiration, AutoDeleteOnIdle: p.AutoDeleteOnIdle,
		RequiresSession: p.RequiresSession, RequiresDuplicateDetection: p.RequiresDuplicateDetection,
		DuplicateWindow: p.DuplicateDetectionHistoryTimeWindow, ForwardTo: p.ForwardTo,
		ForwardDeadLetteredTo: p.ForwardDeadLetteredMessagesTo, MaxSizeMB: p.MaxSizeInMegabytes,
		MaxMessageKB: p.MaxMessageSizeInKilobytes, Status: engine.Status(p.Status),
	}
}

func queueProperties(c engine.Config) QueueProperties {
	return QueueProperties{
		LockDuration: c.LockDuration, MaxDeliveryCount: c.MaxDeliveryCount, DefaultMessageTimeToLive: c.TTL,
		DeadLetteringOnMessageExpiration: c.DeadLetterOnExpiry, AutoDeleteOnIdle: c.AutoDeleteOnIdle,
		RequiresSession: c.RequiresSession, RequiresDuplicateDetection: c.RequiresDuplicateDetection,
		DuplicateDetectionHistoryTimeWindow: c.DuplicateWindow, ForwardTo: c.ForwardTo,
		ForwardDeadLetteredMessagesTo: c.ForwardDeadLetteredTo, MaxSizeInMegabytes: c.MaxSizeMB,
		MaxMessageSizeInKilobytes: c.MaxMessageKB, Status: EntityStatus(c.Status),
	}
}

func (p TopicProperties) config() engine.Config {
	return engine.Config{
		TTL: p.DefaultMessageTimeToLive, AutoDeleteOnIdle: p.AutoDeleteOnIdle,
		RequiresDuplicateDetection: p.RequiresDuplicateDetection, DuplicateWindow: p.DuplicateDetectionHistoryTimeWindow,
		MaxSizeMB: p.MaxSizeInMegabytes, MaxMessageKB: p.MaxMessageSizeInKilobytes, Status: engine.Status(p.Status),
	}
}

func topicProperties(c engine.Config) TopicProperties {
	return TopicProperties{
		DefaultMessageTimeToLive: c.TTL, AutoDeleteOnIdle: c.AutoDeleteOnIdle,
		RequiresDuplicateDetection: c.RequiresDuplicateDetection, DuplicateDetectionHistoryTimeWindow: c.DuplicateWindow,
		MaxSizeInMegabytes: c.MaxSizeMB, MaxMessageSizeInKilobytes: c.MaxMessageKB, Status: EntityStatus(c.Status),
	}
}

func (p SubscriptionProperties) config() engine.Config {
	return engine.Config{
		LockDuration: p.LockDuration, MaxDeliveryCount: p.MaxDeliveryCount, TTL: p.DefaultMessageTimeToLive,
		DeadLetterOnExpiry: p.DeadLetteringOnMessageExpiration, DeadLetterOnFilterError: p.DeadLetteringOnFilterEvaluationExceptions,
		AutoDeleteOnIdle: p.AutoDeleteOnIdle, RequiresSession: p.RequiresSession, ForwardTo: p.ForwardTo,
		ForwardDeadLetteredTo: p.ForwardDeadLetteredMessagesTo, Status: engine.Status(p.Status),
	}
}

func subscriptionProperties(c engine.Config) SubscriptionProperties {
	return SubscriptionProperties{
		LockDuration: c.LockDuration, MaxDeliveryCount: c.MaxDeliveryCount, DefaultMessageTimeToLive: c.TTL,
		DeadLetteringOnMessageExpiration: c.DeadLetterOnExpiry, DeadLetteringOnFilterEvaluationExceptions: c.DeadLetterOnFilterError,
		AutoDeleteOnIdle: c.AutoDeleteOnIdle, RequiresSession: c.RequiresSession, ForwardTo: c.ForwardTo,
		ForwardDeadLetteredMessagesTo: c.ForwardDeadLetteredTo, Status: EntityStatus(c.Status),
	}
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
)

// withDefaults fills in the defaults of the settings that apply to kind and
// checks every setting (SEMANTICS V2, A1, V3, V5): the one place defaults
// live. Errors wrap ErrInvalidArgument and name the first bad field.
func withDefaults(kind engine.Kind, c engine.Config, culprit string) (engine.Config, error) {
	bad := func(format string, args ...any) (engine.Config, error) {
		return c, errorf(ErrInvalidArgument, culprit, format, args...)
	}
	if kind != engine.KindTopic {
		c.LockDuration = orDefault(c.LockDuration, defaultLockDuration)
		c.MaxDeliveryCount = orDefault(c.MaxDeliveryCount, defaultMaxDeliveryCount)
		if c.LockDuration < minLockDuration || c.LockDuration > maxLockDuration {
			return bad("LockDuration %v is outside %v..%v", c.LockDuration, minLockDuration, maxLockDuration)
		}
		if c.MaxDeliveryCount < 1 {
			return bad("MaxDeliveryCount %d is less than 1", c.MaxDeliveryCount)
		}
	}
	if kind != engine.KindSubscription {
		c.DuplicateWindow = orDefault(c.DuplicateWindow, defaultDupWindow)
		c.MaxSizeMB = orDefault(c.MaxSizeMB, defaultMaxSizeMB)
		c.MaxMessageKB = orDefault(c.MaxMessageKB, defaultMaxMessageKB)
		if err := checkLimits(c, culprit); err != nil {
			return c, err
		}
	}
	switch {
	case c.TTL < 0:
		return bad("DefaultMessageTimeToLive %v is negative", c.TTL)
	case c.AutoDeleteOnIdle != 0 && c.AutoDeleteOnIdle < minAutoDeleteOnIdle:
		return bad("AutoDeleteOnIdle %v is less than %v", c.AutoDeleteOnIdle, minAutoDeleteOnIdle)
	case c.Status < engine.StatusActive || c.Status > engine.StatusReceiveDisabled:
		return bad("Status %v is not a status", EntityStatus(c.Status))
	}
	return c, checkFeatures(c, culprit)
}

// checkLimits checks the settings of queues and topics only.
func checkLimits(c engine.Config, culprit string) error {
	switch {
	case c.DuplicateWindow < minDupWindow || c.DuplicateWindow > maxDupWindow:
		return errorf(ErrInvalidArgument, culprit, "DuplicateDetectionHistoryTimeWindow %v is outside %v..%v", c.DuplicateWindow, minDupWindow, maxDupWindow)
	case c.MaxSizeMB < 1 || c.MaxSizeMB > maxMaxSizeMB:
		return errorf(ErrInvalidArgument, culprit, "MaxSizeInMegabytes %d is outside 1..%d", c.MaxSizeMB, maxMaxSizeMB)
	case c.MaxMessageKB < 1 || c.MaxMessageKB > maxMaxMessageKB:
		return errorf(ErrInvalidArgument, culprit, "MaxMessageSizeInKilobytes %d is outside 1..%d", c.MaxMessageKB, maxMaxMessageKB)
	}
	return nil
}

// checkFeatures checks the settings of sessions and forwarding (SEMANTICS
// F1): a session-enabled entity cannot forward its messages (it may forward
// its dead letters). That the destinations exist the engine checks.
func checkFeatures(c engine.Config, culprit string) error {
	if c.RequiresSession && c.ForwardTo != "" {
		return errorf(ErrInvalidArgument, culprit, "ForwardTo %q: an entity that requires sessions cannot forward", c.ForwardTo)
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Name limits (SEMANTICS V1).
const (
	maxEntityNameLength = 260
	maxChildNameLength  = 50
)

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
	switch {
	case name == "":
		return errorf(ErrInvalidArgument, kind+" name", "empty")
	case utf8.RuneCountInString(name) > maxLen:
		return errorf(ErrInvalidArgument, culprit, "longer than %d characters", maxLen)
	}
	for i, c := range name {
		if !allowed(c, i, slash, dollar) {
			return errorf(ErrInvalidArgument, culprit, "character %q at %d is not allowed", c, i)
		}
	}
	if first := rune(name[0]); !isAlnum(first) && !(dollar && first == '$') {
		return errorf(ErrInvalidArgument, culprit, "must start with a letter or digit")
	}
	if !isAlnum(rune(name[len(name)-1])) {
		return errorf(ErrInvalidArgument, culprit, "must end with a letter or digit")
	}
	return nil
}

// allowed reports whether c may stand at byte i of a name (SEMANTICS V1).
func allowed(c rune, i int, slash, dollar bool) bool {
	switch {
	case isAlnum(c), c == '.' || c == '-' || c == '_':
		return true
	case c == '/':
		return slash
	case c == '$':
		return dollar && i == 0
	}
	return false
}

func isAlnum(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
