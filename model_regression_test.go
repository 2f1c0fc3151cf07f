package minibus_test

// The smallest tests for broker bugs the model-based tests found, each
// citing its SEMANTICS rule; they failed before the fixes and guard them.

import (
	"context"
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// V1: "Names are matched case-insensitively and keep the spelling they were
// created with", rule names included. The broker used to match rule names
// exactly: CreateRule("R1") succeeded next to "r1", and DeleteRule("$DEFAULT")
// did not find "$Default".
func TestRegressionV1_RuleNamesCaseInsensitive(t *testing.T) {
	e := newEnv(t)
	s := e.subscription(e.topic("t", nil), "s", nil)
	require.NoError(t, s.CreateRule("r1", nil))
	requireSentinel(t, s.CreateRule("R1", nil), minibus.ErrAlreadyExists, `rule "r1"`)
	require.NoError(t, s.DeleteRule("$DEFAULT"))
	require.Equal(t, []string{"r1"}, ruleNamesOf(s.Rules()))
}

func ruleNamesOf(rules []minibus.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

// E1, R5: the dead-letter copy a failing rule makes used to read the
// TimeToLive the message was sent with, not its effective TTL, while its
// ExpiresAt used the effective one: TimeToLive 0, which ReceivedMessage
// documents as "never expires".
func TestRegressionE1_FilterDeadLetterCopyTTL(t *testing.T) {
	e := newEnv(t)
	top := e.topic("t", nil)
	s := e.subscription(top, "s", &minibus.SubscriptionProperties{
		DefaultMessageTimeToLive:                  10 * time.Second,
		DeadLetteringOnFilterEvaluationExceptions: true,
		DefaultRule: &minibus.RuleProperties{Filter: minibus.SQLFilter{Expression: "n > 1"}},
	})
	require.NoError(t, top.SendMessage(context.Background(), &minibus.Message{
		ApplicationProperties: map[string]any{"n": "not a number"}}, nil))
	dlq := e.peekAll(e.receiver(s, &minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter}))
	require.Len(t, dlq, 1)
	require.Equal(t, "FilterEvaluationException", dlq[0].DeadLetterReason)
	require.True(t, dlq[0].ExpiresAt.Equal(at(10*time.Second)), "ExpiresAt %v", dlq[0].ExpiresAt)
	require.Equal(t, 10*time.Second, dlq[0].TimeToLive)
}

// E1, E2, S2: a scheduled message, peeked before it activates, used to read
// the TimeToLive it was sent with (0) while its ExpiresAt already counted the
// queue's DefaultMessageTimeToLive: ReceivedMessage documents TimeToLive as
// the effective time to live, 0 only when the message never expires.
func TestRegressionE1_ScheduledPeekTTL(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", &minibus.QueueProperties{DefaultMessageTimeToLive: 10 * time.Second})
	_, err := q.ScheduleMessages(e.ctx, []*minibus.Message{{Body: []byte("later")}}, at(time.Minute), nil)
	require.NoError(t, err)
	r := e.receiver(q, nil)
	peeked := e.peekAll(r)
	require.Len(t, peeked, 1)
	require.Equal(t, minibus.MessageStateScheduled, peeked[0].State)
	require.True(t, peeked[0].ExpiresAt.Equal(at(time.Minute+10*time.Second)), "ExpiresAt %v", peeked[0].ExpiresAt)
	e.advanceTo(time.Minute)
	active := e.peekAll(r)
	require.Len(t, active, 1)
	require.Equal(t, 10*time.Second, active[0].TimeToLive)
	require.Equal(t, 10*time.Second, peeked[0].TimeToLive)
}
