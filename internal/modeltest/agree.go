package modeltest

// FiltersAgree: the model's filters and actions against the broker's.

import (
	"context"
	"fmt"
	"strings"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// FiltersAgree is one rapid case of the root's TestModelFiltersAgree: it
// checks the model's filters and actions against the broker's, one message
// and one rule at a time (SEMANTICS R1–R5). The subscription gets a copy
// exactly when the model's rule matches, changed as the model's action
// says, and a FilterEvaluationException dead-letter copy exactly when the
// model's evaluation fails. It fails t at the first disagreement.
func FiltersAgree(t *rapid.T) {
	ctx := context.Background()
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
	msg := &minibus.Message{MessageID: "id", Subject: Pick(t, "subject", "", "a", "b"),
		CorrelationID: Pick(t, "corr", "", "c1"), ApplicationProperties: drawProps(t)}
	if err := top.SendMessage(ctx, msg, nil); err != nil {
		t.Fatal(err)
	}
	gotMain, gotDLQ := peekBoth(t, sub)
	what := fmt.Sprintf("filter %+v action %+v on subject %q props %v", r.public.Filter, r.public.Action, msg.Subject, msg.ApplicationProperties)
	want, ok, evalErr := agreeExpect(r, msg)
	agreeMain(t, what, gotMain, want, ok && !evalErr, evalErr)
	agreeDLQ(t, what, gotDLQ, evalErr && dl)
}

// agreeExpect is what the model's rule r makes of msg: the copy, whether
// it matches and whether its evaluation fails.
func agreeExpect(r *mRule, msg *minibus.Message) (want *mMsg, ok, evalErr bool) {
	x := &mMsg{props: copyMap(msg.ApplicationProperties), headers: mHeaders{Subject: msg.Subject, CorrelationID: msg.CorrelationID}}
	ok, evalErr = r.match(x)
	want = x.clone()
	if ok && !evalErr && r.action != nil {
		evalErr = !r.action.apply(want)
		if want.props == nil {
			want.props = map[string]any{}
		}
		want.props["RuleName"] = "r" // a copy made by an action names its rule (R2)
	}
	return want, ok, evalErr
}

// peekBoth peeks the subscription and its dead-letter queue.
func peekBoth(t *rapid.T, sub *minibus.Subscription) (main, dlq []*minibus.ReceivedMessage) {
	ctx := context.Background()
	for _, q := range []minibus.SubQueue{minibus.SubQueueNone, minibus.SubQueueDeadLetter} {
		r, err := sub.NewReceiver(&minibus.ReceiverOptions{SubQueue: q})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := r.PeekMessages(ctx, 10, nil)
		if q == minibus.SubQueueNone {
			main = got
		} else {
			dlq = got
		}
	}
	return main, dlq
}

// agreeMain checks the subscription's copy: there exactly when the model's
// rule matches, changed as its action says.
func agreeMain(t *rapid.T, what string, got []*minibus.ReceivedMessage, want *mMsg, wantMain, evalErr bool) {
	if (len(got) == 1) != wantMain || len(got) > 1 {
		t.Fatalf("%s: model says copy=%v (eval error %v), broker made %d", what, wantMain, evalErr, len(got))
	}
	if wantMain && (!PropsEqual(got[0].ApplicationProperties, want.props) || got[0].Subject != want.headers.Subject) {
		t.Fatalf("%s: copy has %v subject %q, model says %v subject %q", what,
			got[0].ApplicationProperties, got[0].Subject, want.props, want.headers.Subject)
	}
}

// agreeDLQ checks the dead-letter copy: there exactly when the model's
// evaluation fails and the subscription dead-letters failures (R5).
func agreeDLQ(t *rapid.T, what string, got []*minibus.ReceivedMessage, wantDLQ bool) {
	if (len(got) == 1) != wantDLQ || len(got) > 1 {
		t.Fatalf("%s: model says dead-letter copy=%v, broker made %d", what, wantDLQ, len(got))
	}
	if wantDLQ && (got[0].DeadLetterReason != "FilterEvaluationException" ||
		!strings.HasPrefix(got[0].DeadLetterErrorDescription, `rule "r": `)) {
		t.Fatalf("%s: dead-letter copy reads %q %q", what, got[0].DeadLetterReason, got[0].DeadLetterErrorDescription)
	}
}
