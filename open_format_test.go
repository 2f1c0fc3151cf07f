package minibus_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// A log written before a change of the code opens after it: the
// directories of testdata/records (made by generate.go.txt there, with the
// code before each journaled record became a type of its own) hold every
// kind of record, log in segments only and snap in a snapshot and the
// segments after it, both copied while their namespace was open. Today's
// code reads from them what the code that wrote them read (expected.txt):
// the same entities, properties, rules, messages and session states.
func TestOpenReadsEveryRecordKind(t *testing.T) {
	for _, name := range []string{"log", "snap"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", "records", name)
			want, err := os.ReadFile(filepath.Join(src, "expected.txt"))
			require.NoError(t, err)
			dir := copyLegacy(t, src)
			mock := clock.NewMock()
			mock.Set(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
			ns, err := minibus.Open(dir, minibus.WithClock(mock), minibus.WithSegmentSize(4096))
			require.NoError(t, err)
			got := summarizeRecords(t, ns)
			require.NoError(t, ns.Close())
			require.Equal(t, string(want), got)
		})
	}
}

// summarizeRecords describes the namespace as a test can compare it: every
// entity's properties and counts, every message a peek finds with its
// fields, every rule, every session's state.
func summarizeRecords(t *testing.T, ns *minibus.Namespace) string {
	ctx := context.Background()
	var b strings.Builder
	type peeker interface {
		PeekMessages(context.Context, int, *minibus.PeekMessagesOptions) ([]*minibus.ReceivedMessage, error)
	}
	peek := func(name string, r peeker) {
		msgs, err := r.PeekMessages(ctx, 1000, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
		require.NoError(t, err)
		for _, m := range msgs {
			keys := make([]string, 0, len(m.ApplicationProperties))
			for k := range m.ApplicationProperties {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var props []string
			for _, k := range keys {
				props = append(props, fmt.Sprintf("%s=%T(%v)", k, m.ApplicationProperties[k], m.ApplicationProperties[k]))
			}
			fmt.Fprintf(&b, "  %s #%d/%d %q id=%s session=%s headers=%q deliveries=%d state=%v enqueued=%s expires=%s ttl=%v scheduled=%s dl=%q/%q/%q props=%v\n",
				name, m.SequenceNumber, m.EnqueuedSequenceNumber, m.Body, m.MessageID, m.SessionID,
				[]string{m.ContentType, m.CorrelationID, m.Subject, m.To, m.ReplyTo, m.ReplyToSessionID, m.PartitionKey},
				m.DeliveryCount, m.State,
				m.EnqueuedTime.UTC().Format(time.RFC3339Nano), m.ExpiresAt.UTC().Format(time.RFC3339Nano), m.TimeToLive,
				m.ScheduledEnqueueTime.UTC().Format(time.RFC3339Nano),
				m.DeadLetterReason, m.DeadLetterErrorDescription, m.DeadLetterSource, props)
		}
	}
	type entity interface {
		NewReceiver(*minibus.ReceiverOptions) (*minibus.Receiver, error)
		AcceptSession(context.Context, string, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
		ListSessions(context.Context) ([]string, error)
	}
	peekAll := func(name string, e entity, status minibus.EntityStatus, sessions, forwards bool) {
		if status == minibus.EntityStatusDisabled || status == minibus.EntityStatusReceiveDisabled {
			return
		}
		if forwards {
			// its own queue cannot be read
		} else if sessions {
			ids, err := e.ListSessions(ctx)
			require.NoError(t, err)
			slices.Sort(ids)
			for _, id := range ids {
				s, err := e.AcceptSession(ctx, id, nil)
				require.NoError(t, err)
				state, err := s.GetSessionState(ctx, nil)
				require.NoError(t, err)
				fmt.Fprintf(&b, "  session %s state=%q\n", id, state)
				peek(name+"/"+id, s)
				require.NoError(t, s.Close(ctx))
			}
		} else {
			r, err := e.NewReceiver(nil)
			require.NoError(t, err)
			peek(name, r)
		}
		for _, sq := range []minibus.SubQueue{minibus.SubQueueDeadLetter, minibus.SubQueueTransfer} {
			r, err := e.NewReceiver(&minibus.ReceiverOptions{SubQueue: sq})
			require.NoError(t, err)
			peek(name+"/"+sq.String(), r)
		}
	}
	queues := ns.Queues()
	slices.Sort(queues)
	for _, name := range queues {
		q, err := ns.Queue(name)
		require.NoError(t, err)
		p := q.RuntimeProperties()
		fmt.Fprintf(&b, "queue %s %+v\n  %+v\n", name, q.Properties(), p)
		qp := q.Properties()
		peekAll(name, q, qp.Status, qp.RequiresSession, qp.ForwardTo != "")
	}
	topics := ns.Topics()
	slices.Sort(topics)
	for _, name := range topics {
		top, err := ns.Topic(name)
		require.NoError(t, err)
		fmt.Fprintf(&b, "topic %s %+v\n  %+v\n", name, top.Properties(), top.RuntimeProperties())
		subs := top.Subscriptions()
		slices.Sort(subs)
		for _, sub := range subs {
			s, err := top.Subscription(sub)
			require.NoError(t, err)
			fmt.Fprintf(&b, "subscription %s/%s %+v\n  %+v\n", name, sub, s.Properties(), s.RuntimeProperties())
			for _, r := range s.Rules() {
				fmt.Fprintf(&b, "  rule %+v\n", r)
			}
			sp := s.Properties()
			peekAll(name+"/"+sub, s, sp.Status, sp.RequiresSession, sp.ForwardTo != "")
		}
	}
	return b.String()
}
