package azsb_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// TestMessageBatchLayout guards what azsb's batches rely on in the SDK (see
// azsb/batch.go): *azservicebus.MessageBatch's unexported fields maxBytes
// (uint64, the limit AddMessage checks), marshaledMessages ([][]byte, the
// AMQP-encoded messages AddMessage stores) and mu (sync.RWMutex, which
// guards them). If an SDK version changes any of them, this test fails and
// says what to look at; azsb's NewMessageBatch and SendMessageBatch then
// return an error rather than panic.
func TestMessageBatchLayout(t *testing.T) {
	version := sdkVersion(t)
	typ := reflect.TypeFor[azservicebus.MessageBatch]()
	for name, want := range map[string]reflect.Type{
		"maxBytes":          reflect.TypeFor[uint64](),
		"marshaledMessages": reflect.TypeFor[[][]byte](),
		"mu":                reflect.TypeFor[sync.RWMutex](),
	} {
		f, ok := typ.FieldByName(name)
		require.Truef(t, ok, "azservicebus %s: MessageBatch has no field %q any more; azsb/batch.go builds and reads batches through it and must be changed for this SDK version", version, name)
		require.Equalf(t, want, f.Type, "azservicebus %s: MessageBatch.%s is now a %v; azsb/batch.go relies on a %v and must be changed for this SDK version", version, name, f.Type, want)
	}
	// A zero batch refuses every message: the limit azsb sets is what
	// makes AddMessage work.
	require.ErrorIs(t, new(azservicebus.MessageBatch).AddMessage(&azservicebus.Message{}, nil), azservicebus.ErrMessageTooLarge,
		"azservicebus %s: a zero MessageBatch no longer refuses messages; its limit may have moved", version)
	t.Logf("azservicebus %s: MessageBatch layout as azsb expects", version)
}

// TestMessageBatchBehaviour checks a batch from azsb against the SDK's own
// accounting, and that what SendMessageBatch reads back is what was added.
func TestMessageBatchBehaviour(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	s := e.sender("q")

	b, err := s.NewMessageBatch(e.ctx, &azservicebus.MessageBatchOptions{MaxBytes: 600})
	require.NoError(t, err)
	require.Zero(t, b.NumMessages())
	require.Zero(t, b.NumBytes())
	body := []byte(strings.Repeat("x", 100))
	added := 0
	for {
		err := b.AddMessage(&azservicebus.Message{Body: body, ApplicationProperties: map[string]any{"i": added}}, nil)
		if errors.Is(err, azservicebus.ErrMessageTooLarge) {
			break
		}
		require.NoError(t, err)
		added++
		require.LessOrEqual(t, b.NumBytes(), uint64(600))
	}
	require.Greater(t, added, 1, "the limit azsb set is in force and lets several messages in")
	require.Equal(t, int32(added), b.NumMessages())

	// The default limit is the entity's MaxMessageSizeInKilobytes.
	big, err := s.NewMessageBatch(e.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, big.AddMessage(&azservicebus.Message{Body: make([]byte, 200*1024)}, nil))
	require.ErrorIs(t, big.AddMessage(&azservicebus.Message{Body: make([]byte, 100*1024)}, nil), azservicebus.ErrMessageTooLarge)

	require.NoError(t, s.SendMessageBatch(e.ctx, b, nil))
	r := e.receiver("q", nil)
	msgs := e.receive(r, added)
	for i, m := range msgs {
		require.Equal(t, body, m.Body)
		require.Equal(t, int64(i), m.ApplicationProperties["i"])
		require.NotEmpty(t, m.MessageID, "AddMessage gives each message a UUID, as the SDK does")
	}
}

// TestMessageBatchPlainMessages: messages of a batch that minibus can hold
// in its own fields need no AMQP sections: a plain minibus receiver sees
// them as they were sent.
func TestMessageBatchPlainMessages(t *testing.T) {
	e := newEnv(t)
	q := e.queue("q", nil)
	s := e.sender("q")
	b, err := s.NewMessageBatch(e.ctx, nil)
	require.NoError(t, err)
	ttl := time.Minute
	require.NoError(t, b.AddMessage(&azservicebus.Message{Body: []byte("x"), TimeToLive: &ttl, Subject: ptr("s"),
		PartitionKey: ptr("pk"), ApplicationProperties: map[string]any{"k": "v"}}, nil))
	require.NoError(t, s.SendMessageBatch(e.ctx, b, nil))
	r, err := q.NewReceiver(nil)
	require.NoError(t, err)
	defer r.Close(e.ctx)
	msgs, err := r.ReceiveMessages(e.ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"k": "v"}, msgs[0].ApplicationProperties)
	require.Equal(t, ttl, msgs[0].TimeToLive)
	require.Equal(t, "s", msgs[0].Subject)
	require.Equal(t, "pk", msgs[0].PartitionKey)
}

// TestMessageBatchErrors: what the SDK panics on is an error here.
func TestMessageBatchErrors(t *testing.T) {
	e := newEnv(t)
	e.queue("q", nil)
	s := e.sender("q")
	require.ErrorIs(t, s.SendMessageBatch(e.ctx, nil, nil), minibus.ErrInvalidArgument)
	b, err := s.NewMessageBatch(e.ctx, nil)
	require.NoError(t, err)
	require.ErrorIs(t, s.SendMessageBatch(e.ctx, b, nil), minibus.ErrInvalidArgument)
	require.ErrorIs(t, s.SendMessageBatch(e.ctx, new(azservicebus.MessageBatch), nil), minibus.ErrInvalidArgument)

	missing := e.sender("missing")
	_, err = missing.NewMessageBatch(e.ctx, nil)
	var sbErr *azservicebus.Error
	require.ErrorAs(t, err, &sbErr)
	require.Equal(t, azservicebus.CodeNotFound, sbErr.Code)

	// A batch bigger than the entity takes: the link's error, as the SDK.
	wide, err := s.NewMessageBatch(e.ctx, &azservicebus.MessageBatchOptions{MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.NoError(t, wide.AddMessage(&azservicebus.Message{Body: make([]byte, 300*1024)}, nil))
	err = s.SendMessageBatch(e.ctx, wide, nil)
	var amqpErr *amqp.Error
	require.ErrorAs(t, err, &amqpErr)
	require.Equal(t, amqp.ErrCondMessageSizeExceeded, amqpErr.Condition)
	require.ErrorIs(t, err, azservicebus.ErrMessageTooLarge)
	require.ErrorIs(t, err, minibus.ErrMessageTooLarge)
}

// sdkVersion reads the azservicebus version azsb's go.mod requires.
func sdkVersion(t *testing.T) string {
	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus" {
			return f[1]
		}
	}
	return "(unknown)"
}
