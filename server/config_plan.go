package server

import (
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

// The plan: what the file asks for, checked and converted.

type plan struct {
	queues []*entityPlan
	topics []*topicPlan
}

// entityPlan is a queue, topic or subscription of the file.
type entityPlan struct {
	path     string // "UserConfig.Namespaces[0].Queues[2]"
	namePath string
	name     string
	props    *props
}

type topicPlan struct {
	entityPlan
	subs []*subPlan
}

type subPlan struct {
	entityPlan
	rules []*rulePlan // nil: $Default alone
}

type rulePlan struct {
	path, namePath, name   string
	filterPath, actionPath string
	filter                 minibus.RuleFilter
	action                 minibus.RuleAction // nil: none
}

// entityKind says which properties an entity has.
type entityKind uint8

const (
	kindQueue entityKind = 1 << iota
	kindTopic
	kindSubscription
)

// fieldType is how a property's value is written.
type fieldType uint8

const (
	fieldDuration fieldType = iota
	fieldBool
	fieldInt32
	fieldInt64
	fieldString
	fieldStatus
)

// propertyFields are the properties read, by canonical name, with the
// entities that have them. never: a duration too long for Go means "never"
// (the property's 0).
var propertyFields = []struct {
	name  string
	typ   fieldType
	on    entityKind
	never bool
}{
	{"LockDuration", fieldDuration, kindQueue | kindSubscription, false},
	{"MaxDeliveryCount", fieldInt32, kindQueue | kindSubscription, false},
	{"DefaultMessageTimeToLive", fieldDuration, kindQueue | kindTopic | kindSubscription, true},
	{"DeadLetteringOnMessageExpiration", fieldBool, kindQueue | kindSubscription, false},
	{"DeadLetteringOnFilterEvaluationExceptions", fieldBool, kindSubscription, false},
	{"AutoDeleteOnIdle", fieldDuration, kindQueue | kindTopic | kindSubscription, true},
	{"RequiresSession", fieldBool, kindQueue | kindSubscription, false},
	{"RequiresDuplicateDetection", fieldBool, kindQueue | kindTopic, false},
	{"DuplicateDetectionHistoryTimeWindow", fieldDuration, kindQueue | kindTopic, false},
	{"ForwardTo", fieldString, kindQueue | kindSubscription, false},
	{"ForwardDeadLetteredMessagesTo", fieldString, kindQueue | kindSubscription, false},
	{"MaxSizeInMegabytes", fieldInt32, kindQueue | kindTopic, false},
	{"MaxMessageSizeInKilobytes", fieldInt64, kindQueue | kindTopic, false},
	{"Status", fieldStatus, kindQueue | kindTopic | kindSubscription, false},
}

// props are the properties an entity's Properties object sets: by
// canonical name, the value (time.Duration, bool, int32, int64, string or
// minibus.EntityStatus, as its field has it) and its path.
type props struct {
	vals  map[string]any
	paths map[string]string
}

// readProps reads the Properties member of entity e (absent: none set).
func readProps(e *value, kind entityKind) (*props, error) {
	p := &props{vals: map[string]any{}, paths: map[string]string{}}
	obj := e.get("Properties")
	if obj == nil {
		return p, nil
	}
	if err := obj.object(); err != nil {
		return nil, err
	}
	for _, f := range propertyFields {
		v := obj.get(f.name)
		if v == nil || f.on&kind == 0 {
			continue // not set, or not a property of this kind: ignored as unknown
		}
		var (
			val any
			err error
		)
		switch f.typ {
		case fieldDuration:
			val, err = readDuration(v, f.never)
		case fieldBool:
			val, err = v.boolean()
		case fieldInt32:
			var n int64
			n, err = v.positive(32)
			val = int32(n)
		case fieldInt64:
			val, err = v.positive(64)
		case fieldString:
			val, err = v.text()
		case fieldStatus:
			val, err = readStatus(v)
		}
		if err != nil {
			return nil, err
		}
		p.vals[f.name], p.paths[f.name] = val, v.path
	}
	return p, nil
}

func readDuration(v *value, never bool) (time.Duration, error) {
	s, err := v.text()
	if err != nil {
		return 0, invalidf(v.path, "%s is not an ISO 8601 duration string", v.describe())
	}
	d, err := parseISODuration(s)
	switch {
	case errors.Is(err, errDurationRange) && never:
		return 0, nil
	case errors.Is(err, errDurationRange):
		return 0, invalidf(v.path, "%q is %v", s, err)
	case err != nil:
		return 0, invalidf(v.path, "%q is not an ISO 8601 duration", s)
	case d == 0:
		return 0, invalidf(v.path, "%q is zero", s)
	}
	return d, nil
}

var statuses = []minibus.EntityStatus{
	minibus.EntityStatusActive, minibus.EntityStatusDisabled,
	minibus.EntityStatusSendDisabled, minibus.EntityStatusReceiveDisabled,
}

func readStatus(v *value) (minibus.EntityStatus, error) {
	s, err := v.text()
	if err != nil {
		return 0, err
	}
	for _, st := range statuses {
		if strings.EqualFold(s, st.String()) {
			return st, nil
		}
	}
	return 0, invalidf(v.path, "%q is not Active, Disabled, SendDisabled or ReceiveDisabled", s)
}

// set stores the value of property name, if the file set it, in dst.
func set[T any](p *props, name string, dst *T) {
	if v, ok := p.vals[name]; ok {
		*dst = v.(T) // readProps stores each property with its field's type
	}
}

// queue returns base with the file's properties over it.
func (p *props) queue(base minibus.QueueProperties) minibus.QueueProperties {
	set(p, "LockDuration", &base.LockDuration)
	set(p, "MaxDeliveryCount", &base.MaxDeliveryCount)
	set(p, "DefaultMessageTimeToLive", &base.DefaultMessageTimeToLive)
	set(p, "DeadLetteringOnMessageExpiration", &base.DeadLetteringOnMessageExpiration)
	set(p, "AutoDeleteOnIdle", &base.AutoDeleteOnIdle)
	set(p, "RequiresSession", &base.RequiresSession)
	set(p, "RequiresDuplicateDetection", &base.RequiresDuplicateDetection)
	set(p, "DuplicateDetectionHistoryTimeWindow", &base.DuplicateDetectionHistoryTimeWindow)
	base.DuplicateDetectionHistoryTimeWindow = emulatorWindow(base.DuplicateDetectionHistoryTimeWindow)
	set(p, "ForwardTo", &base.ForwardTo)
	set(p, "ForwardDeadLetteredMessagesTo", &base.ForwardDeadLetteredMessagesTo)
	set(p, "MaxSizeInMegabytes", &base.MaxSizeInMegabytes)
	set(p, "MaxMessageSizeInKilobytes", &base.MaxMessageSizeInKilobytes)
	set(p, "Status", &base.Status)
	return base
}

// topic returns base with the file's properties over it.
func (p *props) topic(base minibus.TopicProperties) minibus.TopicProperties {
	set(p, "DefaultMessageTimeToLive", &base.DefaultMessageTimeToLive)
	set(p, "AutoDeleteOnIdle", &base.AutoDeleteOnIdle)
	set(p, "RequiresDuplicateDetection", &base.RequiresDuplicateDetection)
	set(p, "DuplicateDetectionHistoryTimeWindow", &base.DuplicateDetectionHistoryTimeWindow)
	base.DuplicateDetectionHistoryTimeWindow = emulatorWindow(base.DuplicateDetectionHistoryTimeWindow)
	set(p, "MaxSizeInMegabytes", &base.MaxSizeInMegabytes)
	set(p, "MaxMessageSizeInKilobytes", &base.MaxMessageSizeInKilobytes)
	set(p, "Status", &base.Status)
	return base
}

// subscription returns base with the file's properties over it.
func (p *props) subscription(base minibus.SubscriptionProperties) minibus.SubscriptionProperties {
	set(p, "LockDuration", &base.LockDuration)
	set(p, "MaxDeliveryCount", &base.MaxDeliveryCount)
	set(p, "DefaultMessageTimeToLive", &base.DefaultMessageTimeToLive)
	set(p, "DeadLetteringOnMessageExpiration", &base.DeadLetteringOnMessageExpiration)
	set(p, "DeadLetteringOnFilterEvaluationExceptions", &base.DeadLetteringOnFilterEvaluationExceptions)
	set(p, "AutoDeleteOnIdle", &base.AutoDeleteOnIdle)
	set(p, "RequiresSession", &base.RequiresSession)
	set(p, "ForwardTo", &base.ForwardTo)
	set(p, "ForwardDeadLetteredMessagesTo", &base.ForwardDeadLetteredMessagesTo)
	set(p, "Status", &base.Status)
	return base
}

// quoted matches a Go-quoted string, as minibus quotes names in errors.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// culprit gives the path of what err, from setting the properties p of the
// entity at path, is about: the property whose name comes first in err's
// text outside quoted names, the entity's Name for a name already taken,
// else the entity.
func (p *props) culprit(path string, err error) string {
	if errors.Is(err, minibus.ErrAlreadyExists) {
		return path + ".Name"
	}
	text := quoted.ReplaceAllString(err.Error(), `""`)
	best, at := path, -1
	for name, fp := range p.paths {
		if i := strings.Index(text, name); i >= 0 && (at < 0 || i < at) {
			best, at = fp, i
		}
	}
	return best
}

// readPlan reads the document into a plan, checking every value's type and
// format, and that no name is repeated.
func readPlan(root *value) (*plan, error) {
	if err := root.object(); err != nil {
		return nil, err
	}
	user := root.get("UserConfig")
	if user == nil {
		return nil, invalidf("UserConfig", "missing")
	}
	if err := user.object(); err != nil {
		return nil, err
	}
	nsList := user.get("Namespaces")
	if nsList == nil {
		return nil, invalidf(user.pathOf("Namespaces"), "missing")
	}
	spaces, err := nsList.array()
	if err != nil {
		return nil, err
	}
	if len(spaces) != 1 {
		return nil, invalidf(nsList.path, "holds %d namespaces: minibus serves exactly one", len(spaces))
	}
	space := spaces[0]
	if err := space.object(); err != nil {
		return nil, err
	}
	p := &plan{}
	seen := map[string]string{} // queue and topic names share one name space (V1)
	queues, err := members(space, "Queues")
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		e, err := readEntity(q, kindQueue, seen)
		if err != nil {
			return nil, err
		}
		p.queues = append(p.queues, e)
	}
	topics, err := members(space, "Topics")
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		e, err := readEntity(t, kindTopic, seen)
		if err != nil {
			return nil, err
		}
		tp := &topicPlan{entityPlan: *e}
		subs, err := members(t, "Subscriptions")
		if err != nil {
			return nil, err
		}
		subNames := map[string]string{}
		for _, s := range subs {
			e, err := readEntity(s, kindSubscription, subNames)
			if err != nil {
				return nil, err
			}
			sp := &subPlan{entityPlan: *e}
			if sp.rules, err = readRules(s); err != nil {
				return nil, err
			}
			tp.subs = append(tp.subs, sp)
		}
		p.topics = append(p.topics, tp)
	}
	return p, nil
}

// members returns the elements of the array member name of object v; a
// missing one is empty.
func members(v *value, name string) ([]*value, error) {
	m := v.get(name)
	if m == nil {
		return nil, nil
	}
	elems, err := m.array()
	if err != nil {
		return nil, err
	}
	for _, e := range elems {
		if err := e.object(); err != nil {
			return nil, err
		}
	}
	return elems, nil
}

// readName reads the Name member of v and checks that seen (lower-case
// names to paths) does not have it yet.
func readName(v *value, seen map[string]string) (string, string, error) {
	n := v.get("Name")
	if n == nil {
		return "", "", invalidf(v.pathOf("Name"), "missing")
	}
	name, err := n.text()
	if err != nil {
		return "", "", err
	}
	key := strings.ToLower(name)
	if other, ok := seen[key]; ok {
		return "", "", invalidf(n.path, "%q is also the name at %s (names are case-insensitive)", name, other)
	}
	seen[key] = n.path
	return name, n.path, nil
}

func readEntity(v *value, kind entityKind, seen map[string]string) (*entityPlan, error) {
	name, namePath, err := readName(v, seen)
	if err != nil {
		return nil, err
	}
	p, err := readProps(v, kind)
	if err != nil {
		return nil, err
	}
	return &entityPlan{path: v.path, namePath: namePath, name: name, props: p}, nil
}

// correlationFields are a CorrelationFilter's string members and where
// each goes.
var correlationFields = []struct {
	name string
	dst  func(*minibus.CorrelationFilter) *string
}{
	{"ContentType", func(f *minibus.CorrelationFilter) *string { return &f.ContentType }},
	{"CorrelationId", func(f *minibus.CorrelationFilter) *string { return &f.CorrelationID }},
	{"Label", func(f *minibus.CorrelationFilter) *string { return &f.Subject }},
	{"Subject", func(f *minibus.CorrelationFilter) *string { return &f.Subject }},
	{"MessageId", func(f *minibus.CorrelationFilter) *string { return &f.MessageID }},
	{"ReplyTo", func(f *minibus.CorrelationFilter) *string { return &f.ReplyTo }},
	{"ReplyToSessionId", func(f *minibus.CorrelationFilter) *string { return &f.ReplyToSessionID }},
	{"SessionId", func(f *minibus.CorrelationFilter) *string { return &f.SessionID }},
	{"To", func(f *minibus.CorrelationFilter) *string { return &f.To }},
}

// readRules reads the Rules of subscription s; none listed is nil.
func readRules(s *value) ([]*rulePlan, error) {
	list, err := members(s, "Rules")
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	var rules []*rulePlan
	for _, r := range list {
		name, namePath, err := readName(r, seen)
		if err != nil {
			return nil, err
		}
		rp := &rulePlan{path: r.path, namePath: namePath, name: name}
		props := r.get("Properties")
		if props == nil {
			return nil, invalidf(r.pathOf("Properties"), "missing")
		}
		if err := props.object(); err != nil {
			return nil, err
		}
		if err := readFilter(props, rp); err != nil {
			return nil, err
		}
		if a := props.get("Action"); a != nil {
			expr, err := sqlExpression(a)
			if err != nil {
				return nil, err
			}
			rp.action, rp.actionPath = minibus.SQLAction{Expression: expr}, a.pathOf("SqlExpression")
		}
		rules = append(rules, rp)
	}
	return rules, nil
}

// readFilter reads the filter of a rule's Properties.
func readFilter(props *value, rp *rulePlan) error {
	corr, sql := props.get("CorrelationFilter"), props.get("SqlFilter")
	ft := props.get("FilterType")
	var kind string
	switch {
	case ft != nil:
		s, err := ft.text()
		if err != nil {
			return err
		}
		switch {
		case strings.EqualFold(s, "Correlation"), strings.EqualFold(s, "CorrelationFilter"):
			kind = "Correlation"
		case strings.EqualFold(s, "Sql"), strings.EqualFold(s, "SqlFilter"):
			kind = "Sql"
		default:
			return invalidf(ft.path, "%q is not Correlation or Sql", s)
		}
	case corr != nil && sql == nil:
		kind = "Correlation"
	case sql != nil && corr == nil:
		kind = "Sql"
	default:
		return invalidf(props.pathOf("FilterType"), "missing, and the filter is not clear without it")
	}
	if kind == "Sql" {
		if sql == nil {
			return invalidf(props.pathOf("SqlFilter"), "missing for FilterType Sql")
		}
		expr, err := sqlExpression(sql)
		if err != nil {
			return err
		}
		rp.filter, rp.filterPath = minibus.SQLFilter{Expression: expr}, sql.pathOf("SqlExpression")
		return nil
	}
	if corr == nil {
		return invalidf(props.pathOf("CorrelationFilter"), "missing for FilterType Correlation")
	}
	if err := corr.object(); err != nil {
		return err
	}
	var f minibus.CorrelationFilter
	for _, cf := range correlationFields {
		v := corr.get(cf.name)
		if v == nil {
			continue
		}
		s, err := v.text()
		if err != nil {
			return err
		}
		dst := cf.dst(&f)
		if *dst != "" && *dst != s { // only Label and Subject share a field
			return invalidf(v.path, "%q differs from the Label given beside it, %q", s, *dst)
		}
		*dst = s
	}
	if up := corr.get("Properties"); up != nil {
		if err := up.object(); err != nil {
			return err
		}
		for i, k := range up.keys {
			v, err := propertyValue(up.elems[i])
			if err != nil {
				return err
			}
			if f.ApplicationProperties == nil {
				f.ApplicationProperties = map[string]any{}
			}
			f.ApplicationProperties[k] = v
		}
	}
	rp.filter, rp.filterPath = f, corr.path
	return nil
}

// propertyValue converts the JSON value of a correlation filter's
// application property: a string, a bool, an int64 for a whole number
// that fits, else a float64.
func propertyValue(v *value) (any, error) {
	switch v.kind {
	case jsonString:
		return v.str, nil
	case jsonBool:
		return v.b, nil
	case jsonNumber:
		if n, err := v.num.Int64(); err == nil {
			return n, nil
		}
		if f, err := v.num.Float64(); err == nil {
			return f, nil
		}
		return nil, invalidf(v.path, "%s is out of range", v.describe())
	}
	return nil, invalidf(v.path, "%s is not a string, number or boolean", v.describe())
}

// sqlExpression reads the SqlExpression of a SqlFilter or Action object.
func sqlExpression(v *value) (string, error) {
	if err := v.object(); err != nil {
		return "", err
	}
	e := v.get("SqlExpression")
	if e == nil {
		return "", invalidf(v.pathOf("SqlExpression"), "missing")
	}
	return e.text()
}

// desired returns the rules subscription s is to have: those listed, or
// $Default alone.
func (s *subPlan) desired() []*rulePlan {
	if len(s.rules) == 0 {
		return []*rulePlan{{path: s.path, name: "$Default", filter: minibus.TrueFilter{}}}
	}
	return s.rules
}

func (r *rulePlan) properties() *minibus.RuleProperties {
	return &minibus.RuleProperties{Name: r.name, Filter: r.filter, Action: r.action}
}

// minDuplicateWindow is minibus's shortest duplicate-detection window.
const minDuplicateWindow = 20 * time.Second

// emulatorWindow raises a duplicate-detection window the emulator allows
// (PT5S and up) but minibus does not (20 s and up) to 20 s, so that an
// emulator's file loads as it is: ids are remembered a little longer.
func emulatorWindow(d time.Duration) time.Duration {
	if d >= 5*time.Second && d < minDuplicateWindow {
		return minDuplicateWindow
	}
	return d
}
