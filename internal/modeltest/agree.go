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
	x := &mMsg{props: copyMap(msg.ApplicationProperties), headers: mHeaders{Subject: msg.Subject, CorrelationID: msg.CorrelationID}}
	ok, evalErr := r.match(x)
	want := x.clone()
	if ok && !evalErr && r.action != nil {
		evalErr = !r.action.apply(want)
		if want.props == nil {
			want.props = map[string]any{}
		}
		want.props["RuleName"] = "r" // a copy made by an action names its rule (R2)
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
		if !PropsEqual(gotMain[0].ApplicationProperties, want.props) || gotMain[0].Subject != want.headers.Subject {
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
}
