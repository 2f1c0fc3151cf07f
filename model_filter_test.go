package minibus_test

// The model's own rules (SEMANTICS R1–R5): a small SQL filter language it
// evaluates itself (never through internal/sqlfilter), correlation filters
// and SQL actions, with rapid generators. TestModelFiltersAgree pins the
// model's evaluation against the broker's on single messages; TestModel
// then uses the same rules on whole histories.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// tri is SQL three-valued logic.
type tri int8

const (
	tFalse tri = iota
	tTrue
	tUnknown
)

// fNode is one node of a model SQL filter.
type fNode struct {
	op    string // "num", "str", "exists", "label", "not", "and", "or"
	prop  string // as written: n, N, user.n, ...
	key   string // the user property read
	cmp   string // comparison operator
	n     int64
	param string // "@p1" when n is a parameter
	s     string
	l, r  *fNode
}

func (f *fNode) sql() string {
	switch f.op {
	case "num":
		v := fmt.Sprint(f.n)
		if f.param != "" {
			v = f.param
		}
		return f.prop + " " + f.cmp + " " + v
	case "str":
		return f.prop + " " + f.cmp + " '" + f.s + "'"
	case "exists":
		return "EXISTS(" + f.prop + ")"
	case "label":
		return f.prop + " = '" + f.s + "'"
	case "not":
		return "NOT (" + f.l.sql() + ")"
	}
	return "(" + f.l.sql() + ") " + strings.ToUpper(f.op) + " (" + f.r.sql() + ")"
}

// lookupUser finds a user property: the exact key, else the smallest key
// equal to it case-insensitively (SEMANTICS R3: names are
// case-insensitive).
func lookupUser(props map[string]any, name string) (key string, v any, ok bool) {
	if v, ok := props[name]; ok {
		return name, v, true
	}
	for k, kv := range props {
		if strings.EqualFold(k, name) && (!ok || k < key) {
			key, v, ok = k, kv, true
		}
	}
	return key, v, ok
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

func cmpResult(c int, op string) tri {
	var ok bool
	switch op {
	case "=":
		ok = c == 0
	case "<>", "!=":
		ok = c != 0
	case "<":
		ok = c < 0
	case "<=":
		ok = c <= 0
	case ">":
		ok = c > 0
	case ">=":
		ok = c >= 0
	}
	if ok {
		return tTrue
	}
	return tFalse
}

func cmp3[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// eval is R3 on the model's subset: a missing or nil property is NULL and
// makes a comparison unknown; a comparison of a string with a number (or a
// bool with either) is an evaluation error; AND and OR look at their right
// side only when the left does not decide (errors there stay hidden).
func (f *fNode) eval(x *mMsg) (tri, bool) {
	switch f.op {
	case "num":
		_, v, ok := lookupUser(x.props, f.key)
		if !ok || v == nil {
			return tUnknown, false
		}
		if i, ok := asInt(v); ok {
			return cmpResult(cmp3(i, f.n), f.cmp), false
		}
		if fl, ok := asFloat(v); ok {
			return cmpResult(cmp3(fl, float64(f.n)), f.cmp), false
		}
		return tFalse, true
	case "str":
		_, v, ok := lookupUser(x.props, f.key)
		if !ok || v == nil {
			return tUnknown, false
		}
		s, ok := v.(string)
		if !ok {
			return tFalse, true
		}
		return cmpResult(cmp3(s, f.s), f.cmp), false
	case "exists":
		_, _, ok := lookupUser(x.props, f.key)
		if ok {
			return tTrue, false
		}
		return tFalse, false
	case "label":
		if x.headers.Subject == "" {
			return tUnknown, false // an empty sys. string reads NULL
		}
		return cmpResult(cmp3(x.headers.Subject, f.s), "="), false
	case "not":
		v, err := f.l.eval(x)
		if err {
			return tFalse, true
		}
		switch v {
		case tTrue:
			return tFalse, false
		case tFalse:
			return tTrue, false
		}
		return tUnknown, false
	}
	and := f.op == "and"
	l, err := f.l.eval(x)
	if err {
		return tFalse, true
	}
	if and && l == tFalse {
		return tFalse, false
	}
	if !and && l == tTrue {
		return tTrue, false
	}
	r, err := f.r.eval(x)
	if err {
		return tFalse, true
	}
	switch {
	case and && (l == tFalse || r == tFalse):
		return tFalse, false
	case !and && (l == tTrue || r == tTrue):
		return tTrue, false
	case l == tUnknown || r == tUnknown:
		return tUnknown, false
	}
	if and {
		return tTrue, false
	}
	return tFalse, false
}

// mAction is a SQL action of the model: statements from a fixed menu.
type mAction struct {
	stmts []string // "tag", "inc", "remove", "label"
}

var actionText = map[string]string{
	"tag":    "SET tag = 'v1'",
	"inc":    "SET n = n + 1",
	"remove": "REMOVE color",
	"label":  "SET sys.Label = 'lbl'",
}

func (a *mAction) sql() string {
	parts := make([]string, len(a.stmts))
	for i, s := range a.stmts {
		parts[i] = actionText[s]
	}
	return strings.Join(parts, "; ")
}

// apply changes x as the statements say (R2); false is an evaluation
// error, which fails the rule (R5).
func (a *mAction) apply(x *mMsg) bool {
	set := func(name string, v any) {
		if x.props == nil {
			x.props = map[string]any{}
		}
		key, _, ok := lookupUser(x.props, name)
		if !ok {
			key = name
		}
		x.props[key] = v
	}
	for _, st := range a.stmts {
		switch st {
		case "tag":
			set("tag", "v1")
		case "inc":
			_, v, ok := lookupUser(x.props, "n")
			switch {
			case !ok || v == nil:
				set("n", nil) // NULL + 1 is NULL
			default:
				if i, ok := asInt(v); ok {
					set("n", i+1)
				} else if f, ok := asFloat(v); ok {
					set("n", f+1)
				} else {
					return false
				}
			}
		case "remove":
			for k := range x.props {
				if strings.EqualFold(k, "color") {
					delete(x.props, k)
				}
			}
		case "label":
			x.headers.Subject = "lbl"
		}
	}
	if len(x.props) == 0 {
		x.props = nil
	}
	return true
}

// mRule is a rule as the model sees it, with what to pass to the broker and
// what Rules() must return.
type mRule struct {
	name    string
	kind    string // "true", "false", "sql", "corr"
	node    *fNode
	corr    minibus.CorrelationFilter
	action  *mAction
	invalid bool // the broker must refuse it (bad SQL, empty correlation)
	props   *minibus.RuleProperties
	public  minibus.Rule
}

// match is (matched, evaluation error).
func (r *mRule) match(x *mMsg) (bool, bool) {
	switch r.kind {
	case "true":
		return true, false
	case "false":
		return false, false
	case "corr":
		return corrMatch(r.corr, x), false
	}
	v, err := r.node.eval(x)
	return v == tTrue, err
}

// corrMatch is R4: every field the filter sets equals the message's;
// properties by value, numbers of any type by numeric value.
func corrMatch(f minibus.CorrelationFilter, x *mMsg) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	h := x.headers
	if !eq(f.CorrelationID, h.CorrelationID) || !eq(f.Subject, h.Subject) || !eq(f.ContentType, h.ContentType) ||
		!eq(f.To, h.To) || !eq(f.ReplyTo, h.ReplyTo) {
		return false
	}
	for k, want := range f.ApplicationProperties {
		_, got, ok := lookupUser(x.props, k)
		if !ok || !sameValue(want, got) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			return x == y
		}
	}
	if x, ok := asFloat(a); ok {
		y, ok := asFloat(b)
		return ok && x == y
	}
	return a == b
}

// ---------------------------------------------------------------- generators

// uniform draws 0..n-1 uniformly. rapid's own integer and SampledFrom
// generators lean towards small values and first elements (good for
// shrinking, bad for "one in 40"), so the harness draws unbiased bits and
// takes them modulo n; they still shrink towards 0. A failing case logs
// the raw number drawn.
func uniform(t *rapid.T, label string, n int) int {
	if n <= 1 {
		return 0
	}
	k := 3
	for v := n - 1; v > 0; v >>= 1 {
		k++
	}
	return int(bitsGen(k).Draw(t, label) % uint64(n))
}

var bitsGens sync.Map // bit count -> *rapid.Generator[uint64]

// bitsGen draws k unbiased bits as a number.
func bitsGen(k int) *rapid.Generator[uint64] {
	if g, ok := bitsGens.Load(k); ok {
		return g.(*rapid.Generator[uint64])
	}
	g := rapid.Custom(func(t *rapid.T) uint64 {
		var v uint64
		for _, b := range rapid.SliceOfN(rapid.Bool(), k, k).Draw(t, "bits") {
			v <<= 1
			if b {
				v |= 1
			}
		}
		return v
	})
	bitsGens.Store(k, g)
	return g
}

// chance is true one time in oneIn.
func chance(t *rapid.T, label string, oneIn int) bool { return uniform(t, label, oneIn) == 0 }

// pick draws one of xs uniformly.
func pick[T any](t *rapid.T, label string, xs ...T) T { return xs[uniform(t, label, len(xs))] }

// between draws lo..hi uniformly.
func between(t *rapid.T, label string, lo, hi int) int { return lo + uniform(t, label, hi-lo+1) }

func flip(t *rapid.T, label string) bool { return uniform(t, label, 2) == 1 }

func drawNode(t *rapid.T, depth int, params map[string]any) *fNode {
	op := "num"
	if depth > 0 {
		op = pick(t, "op", "num", "num", "str", "str", "exists", "label", "not", "and", "or")
	} else {
		op = pick(t, "op", "num", "str", "exists", "label")
	}
	switch op {
	case "num":
		prop := pick(t, "prop", "n", "N", "user.n")
		f := &fNode{op: op, key: strings.TrimPrefix(prop, "user."), prop: prop,
			cmp: pick(t, "cmp", ">", "<", "=", ">=", "<=", "<>", "!="), n: int64(between(t, "k", -1, 4))}
		if chance(t, "param", 4) {
			f.param = fmt.Sprintf("@p%d", len(params)+1)
			params[f.param] = f.n
		}
		return f
	case "str":
		prop := pick(t, "prop", "color", "Color", "user.color")
		return &fNode{op: op, key: strings.TrimPrefix(prop, "user."), prop: prop,
			cmp: pick(t, "cmp", "=", "<>"), s: pick(t, "s", "red", "blue")}
	case "exists":
		k := pick(t, "exists", "x", "color", "n", "tag")
		return &fNode{op: op, key: k, prop: k}
	case "label":
		return &fNode{op: op, prop: pick(t, "sys", "sys.Label", "sys.Subject"), s: pick(t, "label", "a", "b", "lbl")}
	case "not":
		return &fNode{op: op, l: drawNode(t, depth-1, params)}
	}
	return &fNode{op: op, l: drawNode(t, depth-1, params), r: drawNode(t, depth-1, params)}
}

func drawAction(t *rapid.T) *mAction {
	n := between(t, "statements", 1, 2)
	a := &mAction{}
	for range n {
		a.stmts = append(a.stmts, pick(t, "statement", "tag", "inc", "remove", "label"))
	}
	return a
}

// drawRule draws a rule; withInvalid lets it be one the broker must refuse.
func drawRule(t *rapid.T, name string, withInvalid bool) *mRule {
	r := &mRule{name: name, props: &minibus.RuleProperties{Name: name}}
	kinds := []string{"true", "false", "sql", "sql", "sql", "sql", "sql", "corr", "corr", "nil"}
	if withInvalid {
		kinds = append(kinds, "badsql", "badcorr", "badaction")
	}
	switch k := pick(t, "filter", kinds...); k {
	case "nil":
		r.kind = "true"
		r.public.Filter = minibus.TrueFilter{}
	case "true":
		r.kind = k
		r.props.Filter = minibus.TrueFilter{}
		r.public.Filter = minibus.TrueFilter{}
	case "false":
		r.kind = k
		r.props.Filter = &minibus.FalseFilter{}
		r.public.Filter = minibus.FalseFilter{}
	case "sql":
		r.kind = k
		params := map[string]any{}
		r.node = drawNode(t, between(t, "depth", 0, 2), params)
		if len(params) == 0 {
			params = nil
		}
		f := minibus.SQLFilter{Expression: r.node.sql(), Parameters: params}
		r.props.Filter = f
		r.public.Filter = f
	case "corr":
		r.kind = k
		var f minibus.CorrelationFilter
		for !corrSets(f) {
			if chance(t, "corrSubject", 2) {
				f.Subject = pick(t, "subject", "a", "b")
			}
			if chance(t, "corrCorrelation", 3) {
				f.CorrelationID = "c1"
			}
			if chance(t, "corrContentType", 4) {
				f.ContentType = "text/plain"
			}
			if chance(t, "corrProps", 2) {
				f.ApplicationProperties = map[string]any{
					pick(t, "corrKey", "color", "n", "N"): pick[any](t, "corrValue", "red", "blue", 1, int64(2), 2.0, true),
				}
			}
		}
		r.corr = f
		r.props.Filter = f
		r.public.Filter = f
	case "badsql":
		r.kind, r.invalid = "sql", true
		r.props.Filter = minibus.SQLFilter{Expression: pick(t, "badsql", "n >", "color = = 'x'", "sys.Nope = 1", "(n > 1", "")}
	case "badcorr":
		r.kind, r.invalid = "corr", true
		r.props.Filter = minibus.CorrelationFilter{}
	case "badaction":
		r.kind, r.invalid = "true", true
		r.props.Action = minibus.SQLAction{Expression: pick(t, "badaction", "SET", "SET sys.SequenceNumber = 1", "DROP x")}
		return r
	}
	if chance(t, "hasAction", 3) {
		r.action = drawAction(t)
		a := minibus.SQLAction{Expression: r.action.sql()}
		r.props.Action = a
		r.public.Action = a
	}
	r.public.Name = name
	return r
}

func corrSets(f minibus.CorrelationFilter) bool {
	return f.Subject != "" || f.CorrelationID != "" || f.ContentType != "" || len(f.ApplicationProperties) > 0
}

// drawProps draws application properties over the names the rules read,
// with values of every type the rules treat differently.
func drawProps(t *rapid.T) map[string]any {
	p := map[string]any{}
	if chance(t, "hasN", 2) {
		p["n"] = pick[any](t, "n", 0, 1, 2, 3, 4, int64(3), 2.5, "3", true, nil, int32(1))
	}
	if chance(t, "hasBigN", 8) {
		p["N"] = pick[any](t, "N", 1, 9)
	}
	if chance(t, "hasColor", 2) {
		p["color"] = pick[any](t, "color", "red", "blue", "red", 7, nil, false)
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

// TestModelFiltersAgree checks the model's filters and actions against the
// broker's, one message and one rule at a time (SEMANTICS R1–R5): a copy in
// the subscription exactly when the model's rule matches, changed as the
// model's action says, and a FilterEvaluationException dead-letter copy
// exactly when the model's evaluation fails.
func TestModelFiltersAgree(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		mock := clock.NewMock()
		mock.Set(epoch)
		ns := minibus.NewNamespace(minibus.WithClock(mock))
		defer ns.Close()
		top, err := ns.CreateTopic("t", nil)
		if err != nil {
			t.Fatal(err)
		}
		r := drawRule(t, "r", false)
		dl := flip(t, "dlOnFilter")
		sub, err := top.CreateSubscription("s", &minibus.SubscriptionProperties{
			DefaultRule: r.props, DeadLetteringOnFilterEvaluationExceptions: dl})
		if err != nil {
			t.Fatalf("rule %q: %v", r.props, err)
		}
		msg := &minibus.Message{MessageID: "id", Subject: pick(t, "subject", "", "a", "b"),
			CorrelationID: pick(t, "corr", "", "c1"), ApplicationProperties: drawProps(t)}
		if err := top.SendMessage(ctx, msg, nil); err != nil {
			t.Fatal(err)
		}
		x := &mMsg{props: copyMap(msg.ApplicationProperties), headers: mHeaders{Subject: msg.Subject, CorrelationID: msg.CorrelationID}}
		ok, evalErr := r.match(x)
		want := x.clone()
		if ok && !evalErr && r.action != nil {
			evalErr = !r.action.apply(want)
		}
		main, err := sub.NewReceiver(nil)
		if err != nil {
			t.Fatal(err)
		}
		dlq, err := sub.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		if err != nil {
			t.Fatal(err)
		}
		gotMain, _ := main.PeekMessages(ctx, 10, nil)
		gotDLQ, _ := dlq.PeekMessages(ctx, 10, nil)
		what := fmt.Sprintf("filter %+v action %+v on subject %q props %v", r.public.Filter, r.public.Action, msg.Subject, msg.ApplicationProperties)
		wantMain := ok && !evalErr
		if (len(gotMain) == 1) != wantMain || len(gotMain) > 1 {
			t.Fatalf("%s: model says copy=%v (eval error %v), broker made %d", what, wantMain, evalErr, len(gotMain))
		}
		if wantMain {
			if !propsEqual(gotMain[0].ApplicationProperties, want.props) || gotMain[0].Subject != want.headers.Subject {
				t.Fatalf("%s: copy has %v subject %q, model says %v subject %q", what,
					gotMain[0].ApplicationProperties, gotMain[0].Subject, want.props, want.headers.Subject)
			}
		}
		wantDLQ := evalErr && dl
		if (len(gotDLQ) == 1) != wantDLQ || len(gotDLQ) > 1 {
			t.Fatalf("%s: model says dead-letter copy=%v, broker made %d", what, wantDLQ, len(gotDLQ))
		}
		if wantDLQ && (gotDLQ[0].DeadLetterReason != "FilterEvaluationException" ||
			!strings.HasPrefix(gotDLQ[0].DeadLetterErrorDescription, `rule "r": `)) {
			t.Fatalf("%s: dead-letter copy reads %q %q", what, gotDLQ[0].DeadLetterReason, gotDLQ[0].DeadLetterErrorDescription)
		}
	})
}
