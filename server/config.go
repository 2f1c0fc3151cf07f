// Config.json: the official Service Bus emulator's configuration file,
// read by ApplyConfig. The file is read whole into a plan (every value
// checked and converted, its JSON path kept), the plan is tried on
// throw-away namespaces (each name, property set and rule alone, then the
// whole plan on a copy of the target's entities), and only then applied to
// the target: a bad file changes nothing.

package server

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
)

// ApplyConfig creates what the official emulator's Config.json describes
// (UserConfig.Namespaces[0]: queues, topics, subscriptions, rules with
// Correlation and Sql filters and Sql actions, ISO 8601 durations) in ns.
// JSON with // comments and trailing commas is accepted; unknown keys are
// ignored; the emulator's quotas (50 entities, MaxDeliveryCount ≤ 10, TTL
// ≤ 1 h, …) are not enforced. An entity that exists already is updated. A
// subscription without Rules gets the $Default rule (R1); listed Rules
// replace it. A bad file is ErrInvalidArgument naming the JSON path of the
// culprit, and changes nothing.
//
// In detail:
//   - Keys are matched case-insensitively; a null value is the same as a
//     missing key. /* */ comments and a UTF-8 byte order mark are accepted
//     too.
//   - UserConfig.Namespaces must hold exactly one namespace (the emulator's
//     schema requires one); its Name is not checked (the emulator wants
//     "sbemulatorns"), Logging is ignored. Queues, Topics and Subscriptions
//     may be missing.
//   - Properties of queues and subscriptions: LockDuration,
//     MaxDeliveryCount, DefaultMessageTimeToLive,
//     DeadLetteringOnMessageExpiration, RequiresSession, ForwardTo,
//     ForwardDeadLetteredMessagesTo; of queues and topics:
//     RequiresDuplicateDetection, DuplicateDetectionHistoryTimeWindow; of
//     topics: DefaultMessageTimeToLive. Beyond the emulator's schema,
//     minibus also reads AutoDeleteOnIdle, Status ("Active", "Disabled",
//     "SendDisabled", "ReceiveDisabled") on all three,
//     MaxSizeInMegabytes and MaxMessageSizeInKilobytes on queues and
//     topics, and DeadLetteringOnFilterEvaluationExceptions on
//     subscriptions. A property left out takes minibus's default (not the
//     emulator's: MaxDeliveryCount 10, messages that never expire), or, on
//     an entity that exists, keeps its value. Numbers and durations must be
//     positive (0 would mean "the default").
//   - Durations are ISO 8601, P[nY][nM][nD][T[nH][nM][nS]], a year being
//     365 days and a month 30, the seconds possibly fractional ("PT0.5S").
//     A DefaultMessageTimeToLive or AutoDeleteOnIdle longer than 292 years
//     (Azure's "never", P10675199DT2H48M5.4775807S) means never. A
//     DuplicateDetectionHistoryTimeWindow of 5 s to 20 s, which the
//     emulator allows and minibus does not, is raised to 20 s.
//   - A rule has a Name and Properties with FilterType "Correlation" (a
//     CorrelationFilter of ContentType, CorrelationId, Label (the message's
//     Subject; "Subject" is accepted too), MessageId, ReplyTo,
//     ReplyToSessionId, SessionId, To and Properties, the message's
//     ApplicationProperties: strings, numbers and booleans) or "Sql" (a
//     SqlFilter's SqlExpression), and an optional Action's SqlExpression.
//     Without FilterType the one filter given decides.
//   - A subscription's rules become exactly those listed, or $Default (a
//     TrueFilter) alone when none are: a rule that exists unchanged is
//     kept, one that changed is replaced (deleted, then created), one not
//     listed is deleted once the new ones are in place: messages sent
//     meanwhile meet the old rules or the new ones.
//   - ForwardTo may name an entity created later in the file.
//
// The checks cover everything ns itself would refuse (names, ranges,
// RequiresSession or RequiresDuplicateDetection changed on an existing
// entity, forwarding to a missing entity, bad SQL, names repeated in the
// file or a queue named as an existing topic). Those errors wrap
// ErrInvalidArgument only. What can still fail once the checks have passed
// is what happens to ns meanwhile (closed, or changed by another
// goroutine): that error names the entity and wraps its own sentinel
// (ErrClosed, ErrNotFound, …), and what came before it in the file stays
// applied. ApplyConfig is safe to call concurrently with anything, but is
// not atomic with respect to other changes of ns.
func ApplyConfig(ns *minibus.Namespace, config []byte) error {
	if ns == nil {
		return invalidf("", "nil *minibus.Namespace")
	}
	root, err := parseTree(config)
	if err != nil {
		return err
	}
	plan, err := readPlan(root)
	if err != nil {
		return err
	}
	if err := plan.probe(); err != nil {
		return err
	}
	if err := plan.rehearse(ns); err != nil {
		return err
	}
	return plan.applyTo(ns, applyError)
}

// configError is an error of ApplyConfig: "minibus: config: <path>:
// <detail>: <sentinel>".
type configError struct {
	path, detail string
	err          error // a minibus sentinel
}

func (e *configError) Error() string {
	s := "minibus: config"
	if e.path != "" {
		s += ": " + e.path
	}
	return s + ": " + e.detail + ": " + e.err.Error()
}

func (e *configError) Unwrap() error { return e.err }

// invalidf returns a configError wrapping ErrInvalidArgument.
func invalidf(path, format string, args ...any) error {
	return &configError{path: path, detail: fmt.Sprintf(format, args...), err: minibus.ErrInvalidArgument}
}

// sentinels are minibus's errors, to recognise which one an error wraps.
var sentinels = []error{
	minibus.ErrInvalidArgument, minibus.ErrNotFound, minibus.ErrAlreadyExists, minibus.ErrClosed,
	minibus.ErrStoreFailed, minibus.ErrQuotaExceeded, minibus.ErrEntityDisabled, minibus.ErrCorrupt,
	minibus.ErrLockLost, minibus.ErrSessionLockLost, minibus.ErrSessionCannotBeLocked,
	minibus.ErrMessageNotFound, minibus.ErrMessageTooLarge,
}

// unwrapped splits an error of minibus into its text, without the
// "minibus: " in front and the sentinel behind, and its sentinel.
func unwrapped(err error) (string, error) {
	msg := strings.TrimPrefix(err.Error(), "minibus: ")
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return strings.TrimSuffix(msg, ": "+s.Error()), s
		}
	}
	return msg, minibus.ErrInvalidArgument
}

// checkError reports what a trial namespace refused: the file is bad, so
// ErrInvalidArgument, whatever the trial's own sentinel.
func checkError(path string, err error) error {
	detail, _ := unwrapped(err)
	return &configError{path: path, detail: detail, err: minibus.ErrInvalidArgument}
}

// applyError reports what the target namespace refused after the checks
// passed, with the namespace's own sentinel.
func applyError(path string, err error) error {
	detail, sentinel := unwrapped(err)
	return &configError{path: path, detail: detail, err: sentinel}
}

// trial returns a namespace for trying the plan on: on a mock clock, so
// that nothing in it ever happens by itself.
func trial() *minibus.Namespace {
	return minibus.NewNamespace(minibus.WithClock(clock.NewMock()))
}

// probe tries each entity and rule of the plan alone on throw-away
// namespaces, to name the culprit exactly: the Name, the property, the
// filter or the action. Each is tried whole first; only what fails is
// tried again in parts. Forwarding is left to rehearse. Subscriptions are
// tried under a topic of their own topic's name, so that what the errors
// quote is what the file says.
func (p *plan) probe() error {
	entities, children := trial(), trial()
	defer entities.Close()
	defer children.Close()
	for _, q := range p.queues {
		props := q.props.queue(minibus.QueueProperties{})
		props.ForwardTo, props.ForwardDeadLetteredMessagesTo = "", ""
		err := probeEntity(q, func(withProps bool) error {
			_, err := entities.CreateQueue(q.name, pick(withProps, &props))
			return err
		}, func() error { return entities.DeleteQueue(q.name) })
		if err != nil {
			return err
		}
	}
	for _, t := range p.topics {
		props := t.props.topic(minibus.TopicProperties{})
		err := probeEntity(&t.entityPlan, func(withProps bool) error {
			_, err := entities.CreateTopic(t.name, pick(withProps, &props))
			return err
		}, func() error { return entities.DeleteTopic(t.name) })
		if err != nil {
			return err
		}
		if err := probeSubscriptions(children, t); err != nil {
			return err
		}
	}
	return nil
}

// probeEntity creates the entity e with its properties; if that fails,
// by its name alone, to tell a bad name from a bad property. del deletes
// what was created.
func probeEntity(e *entityPlan, create func(withProps bool) error, del func() error) error {
	err := create(true)
	if err == nil {
		return nil
	}
	if err := create(false); err != nil {
		return checkError(e.namePath, err)
	}
	if err := del(); err != nil {
		return checkError(e.path, err)
	}
	return checkError(e.props.culprit(e.path, err), err)
}

// probeSubscriptions tries the subscriptions of t and their rules in ns.
func probeSubscriptions(ns *minibus.Namespace, t *topicPlan) error {
	holder, err := ns.CreateTopic(t.name, nil) // names are unique in the file: no other has it
	if err != nil {
		return checkError(t.namePath, err)
	}
	for _, s := range t.subs {
		props := s.props.subscription(minibus.SubscriptionProperties{})
		props.ForwardTo, props.ForwardDeadLetteredMessagesTo = "", ""
		var sub *minibus.Subscription
		err := probeEntity(&s.entityPlan, func(withProps bool) error {
			var err error
			sub, err = holder.CreateSubscription(s.name, pick(withProps, &props))
			return err
		}, func() error { return holder.DeleteSubscription(s.name) })
		if err != nil {
			return err
		}
		if err := probeRules(sub, s); err != nil {
			return err
		}
		if err := holder.DeleteSubscription(s.name); err != nil {
			return checkError(s.path, err)
		}
	}
	return nil
}

// pick returns props, or nil (every default) when withProps is false.
func pick[T any](withProps bool, props *T) *T {
	if !withProps {
		return nil
	}
	return props
}

// probeRules tries each rule of s on sub, whole; one that fails is tried
// again by its name alone, its filter alone and its action alone.
func probeRules(sub *minibus.Subscription, s *subPlan) error {
	if len(s.rules) > 0 {
		if err := sub.DeleteRule("$Default"); err != nil { // the file may name a rule so
			return checkError(s.path, err)
		}
	}
	type part struct {
		path  string
		props *minibus.RuleProperties
	}
	for _, r := range s.rules {
		whole := sub.CreateRule(r.name, r.properties())
		if whole == nil {
			if err := sub.DeleteRule(r.name); err != nil {
				return checkError(r.path, err)
			}
			continue
		}
		parts := []part{{r.namePath, nil}, {r.filterPath, &minibus.RuleProperties{Filter: r.filter}}}
		if r.action != nil {
			parts = append(parts, part{r.actionPath, &minibus.RuleProperties{Filter: minibus.TrueFilter{}, Action: r.action}})
		}
		for _, p := range parts {
			if err := sub.CreateRule(r.name, p.props); err != nil {
				return checkError(p.path, err)
			}
			if err := sub.DeleteRule(r.name); err != nil {
				return checkError(r.path, err)
			}
		}
		return checkError(r.path, whole) // bad only as a whole
	}
	return nil
}

// rehearse applies the plan to a copy of ns's queues, topics and
// subscriptions (their properties; forwarding and rules left out, which no
// check of the plan depends on), so that whatever ns would refuse is found
// before ns is changed.
func (p *plan) rehearse(ns *minibus.Namespace) error {
	copyNS := trial()
	defer copyNS.Close()
	for _, name := range ns.Queues() {
		q, err := ns.Queue(name)
		if err != nil {
			continue // deleted meanwhile
		}
		props := q.Properties()
		props.ForwardTo, props.ForwardDeadLetteredMessagesTo = "", ""
		if _, err := copyNS.CreateQueue(name, &props); err != nil {
			return applyError("", err)
		}
	}
	for _, name := range ns.Topics() {
		t, err := ns.Topic(name)
		if err != nil {
			continue
		}
		props := t.Properties()
		ct, err := copyNS.CreateTopic(name, &props)
		if err != nil {
			return applyError("", err)
		}
		for _, sname := range t.Subscriptions() {
			s, err := t.Subscription(sname)
			if err != nil {
				continue
			}
			props := s.Properties()
			props.ForwardTo, props.ForwardDeadLetteredMessagesTo = "", ""
			if _, err := ct.CreateSubscription(sname, &props); err != nil {
				return applyError("", err)
			}
		}
	}
	return p.applyTo(copyNS, checkError)
}

// applyTo applies the plan to ns; fail makes the error of a refused step
// from the path of its culprit. An entity whose properties the file does
// not change is not updated (an update is activity, SEMANTICS A2).
func (p *plan) applyTo(ns *minibus.Namespace, fail func(path string, err error) error) error {
	// New queues and topics first, without forwarding, so that every
	// entity the file names exists before any forwards to it; then every
	// queue and topic is updated where the file changes it.
	for _, q := range p.queues {
		switch _, err := ns.Queue(q.name); {
		case err == nil:
			continue
		case !errors.Is(err, minibus.ErrNotFound):
			return fail(q.path, err)
		}
		props := q.props.queue(minibus.QueueProperties{})
		props.ForwardTo, props.ForwardDeadLetteredMessagesTo = "", ""
		if _, err := ns.CreateQueue(q.name, &props); err != nil {
			return fail(q.props.culprit(q.path, err), err)
		}
	}
	for _, t := range p.topics {
		switch _, err := ns.Topic(t.name); {
		case err == nil:
			continue
		case !errors.Is(err, minibus.ErrNotFound):
			return fail(t.path, err)
		}
		props := t.props.topic(minibus.TopicProperties{})
		if _, err := ns.CreateTopic(t.name, &props); err != nil {
			return fail(t.props.culprit(t.path, err), err)
		}
	}
	for _, q := range p.queues {
		old, err := ns.Queue(q.name)
		if err != nil {
			return fail(q.path, err)
		}
		if props := q.props.queue(old.Properties()); props != old.Properties() {
			if _, err := ns.UpdateQueue(q.name, props); err != nil {
				return fail(q.props.culprit(q.path, err), err)
			}
		}
	}
	for _, t := range p.topics {
		topic, err := ns.Topic(t.name)
		if err != nil {
			return fail(t.path, err)
		}
		if props := t.props.topic(topic.Properties()); props != topic.Properties() {
			if _, err := ns.UpdateTopic(t.name, props); err != nil {
				return fail(t.props.culprit(t.path, err), err)
			}
		}
		for _, s := range t.subs {
			if err := s.applyTo(topic, fail); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyTo creates or updates subscription s of topic, and its rules.
func (s *subPlan) applyTo(topic *minibus.Topic, fail func(path string, err error) error) error {
	want := s.desired()
	sub, err := topic.Subscription(s.name)
	switch {
	case errors.Is(err, minibus.ErrNotFound):
		props := s.props.subscription(minibus.SubscriptionProperties{})
		props.DefaultRule = want[0].properties()
		sub, err := topic.CreateSubscription(s.name, &props)
		if err != nil {
			return fail(s.props.culprit(s.path, err), err)
		}
		for _, r := range want[1:] {
			if err := sub.CreateRule(r.name, r.properties()); err != nil {
				return fail(r.path, err)
			}
		}
		return nil
	case err != nil:
		return fail(s.path, err)
	}
	if props := s.props.subscription(sub.Properties()); props != sub.Properties() {
		if _, err := topic.UpdateSubscription(s.name, props); err != nil {
			return fail(s.props.culprit(s.path, err), err)
		}
	}
	return syncRules(sub, s.path, want, fail)
}

// syncRules makes the rules of sub, the subscription at path, those of
// want: new ones are added first, changed ones replaced, the rest removed
// last, so that the subscription is without a rule at most while its only
// rule is replaced by one of the same name.
func syncRules(sub *minibus.Subscription, path string, want []*rulePlan, fail func(path string, err error) error) error {
	have := map[string]minibus.Rule{}
	for _, r := range sub.Rules() {
		have[strings.ToLower(r.Name)] = r
	}
	var replace []*rulePlan
	for _, r := range want {
		old, ok := have[strings.ToLower(r.name)]
		delete(have, strings.ToLower(r.name))
		switch {
		case !ok:
			if err := sub.CreateRule(r.name, r.properties()); err != nil {
				return fail(r.path, err)
			}
		case old.Name != r.name || !reflect.DeepEqual(old.Filter, r.filter) || !reflect.DeepEqual(old.Action, r.action):
			replace = append(replace, r)
		}
	}
	for _, r := range replace {
		if err := sub.DeleteRule(r.name); err != nil {
			return fail(r.path, err)
		}
		if err := sub.CreateRule(r.name, r.properties()); err != nil {
			return fail(r.path, err)
		}
	}
	for _, old := range have {
		if err := sub.DeleteRule(old.Name); err != nil && !errors.Is(err, minibus.ErrNotFound) {
			return fail(path, err)
		}
	}
	return nil
}
