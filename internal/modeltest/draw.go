package modeltest

// Drawing: unbiased choices, and the names, properties, rules and messages
// the actions use.

import (
	"fmt"
	"strings"
	"sync"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

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

// Pick draws one of xs uniformly (see uniform: rapid's SampledFrom leans
// towards the first elements), under label in a failing case's log.
func Pick[T any](t *rapid.T, label string, xs ...T) T { return xs[uniform(t, label, len(xs))] }

// Between draws an int in lo..hi uniformly, under label in a failing
// case's log.
func Between(t *rapid.T, label string, lo, hi int) int { return lo + uniform(t, label, hi-lo+1) }

func flip(t *rapid.T, label string) bool { return uniform(t, label, 2) == 1 }

func drawNode(t *rapid.T, depth int, params map[string]any) *fNode {
	op := "num"
	if depth > 0 {
		op = Pick(t, "op", "num", "num", "str", "str", "exists", "label", "not", "and", "or")
	} else {
		op = Pick(t, "op", "num", "str", "exists", "label")
	}
	switch op {
	case "num":
		prop := Pick(t, "prop", "n", "N", "user.n")
		f := &fNode{op: op, key: strings.TrimPrefix(prop, "user."), prop: prop,
			cmp: Pick(t, "cmp", ">", "<", "=", ">=", "<=", "<>", "!="), n: int64(Between(t, "k", -1, 4))}
		if chance(t, "param", 4) {
			f.param = fmt.Sprintf("@p%d", len(params)+1)
			params[f.param] = f.n
		}
		return f
	case "str":
		prop := Pick(t, "prop", "color", "Color", "user.color")
		return &fNode{op: op, key: strings.TrimPrefix(prop, "user."), prop: prop,
			cmp: Pick(t, "cmp", "=", "<>"), s: Pick(t, "s", "red", "blue")}
	case "exists":
		k := Pick(t, "exists", "x", "color", "n", "tag")
		return &fNode{op: op, key: k, prop: k}
	case "label":
		return &fNode{op: op, prop: Pick(t, "sys", "sys.Label", "sys.Subject"), s: Pick(t, "label", "a", "b", "lbl")}
	case "not":
		return &fNode{op: op, l: drawNode(t, depth-1, params)}
	}
	return &fNode{op: op, l: drawNode(t, depth-1, params), r: drawNode(t, depth-1, params)}
}

func drawAction(t *rapid.T) *mAction {
	n := Between(t, "statements", 1, 2)
	a := &mAction{}
	for range n {
		a.stmts = append(a.stmts, Pick(t, "statement", "tag", "inc", "remove", "label"))
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
	switch k := Pick(t, "filter", kinds...); k {
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
		drawSQLRule(t, r)
	case "corr":
		drawCorrRule(t, r)
	default:
		if drawBadRule(t, r, k) {
			return r
		}
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

func drawSQLRule(t *rapid.T, r *mRule) {
	r.kind = "sql"
	params := map[string]any{}
	r.node = drawNode(t, Between(t, "depth", 0, 2), params)
	if len(params) == 0 {
		params = nil
	}
	f := minibus.SQLFilter{Expression: r.node.sql(), Parameters: params}
	r.props.Filter = f
	r.public.Filter = f
}

func drawCorrRule(t *rapid.T, r *mRule) {
	r.kind = "corr"
	var f minibus.CorrelationFilter
	for !corrSets(f) {
		if chance(t, "corrSubject", 2) {
			f.Subject = Pick(t, "subject", "a", "b")
		}
		if chance(t, "corrCorrelation", 3) {
			f.CorrelationID = "c1"
		}
		if chance(t, "corrContentType", 4) {
			f.ContentType = "text/plain"
		}
		if chance(t, "corrProps", 2) {
			f.ApplicationProperties = map[string]any{
				Pick(t, "corrKey", "color", "n", "N"): Pick[any](t, "corrValue", "red", "blue", 1, int64(2), 2.0, true),
			}
		}
	}
	r.corr = f
	r.props.Filter = f
	r.public.Filter = f
}

// drawBadRule makes r one the broker must refuse; true when it is done
// (no action to add).
func drawBadRule(t *rapid.T, r *mRule, kind string) bool {
	r.invalid = true
	switch kind {
	case "badsql":
		r.kind = "sql"
		r.props.Filter = minibus.SQLFilter{Expression: Pick(t, "badsql", "n >", "color = = 'x'", "sys.Nope = 1", "(n > 1", "")}
	case "badcorr":
		r.kind = "corr"
		r.props.Filter = minibus.CorrelationFilter{}
	default:
		r.kind = "true"
		r.props.Action = minibus.SQLAction{Expression: Pick(t, "badaction", "SET", "SET sys.SequenceNumber = 1", "DROP x")}
		return true
	}
	return false
}

func corrSets(f minibus.CorrelationFilter) bool {
	return f.Subject != "" || f.CorrelationID != "" || f.ContentType != "" || len(f.ApplicationProperties) > 0
}
