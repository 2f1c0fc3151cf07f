package azsb

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// How azsb makes and reads an *azservicebus.MessageBatch.
//
// The SDK's MessageBatch is a struct whose size limit and messages are
// unexported, and whose only constructor is unexported too: outside the SDK
// one can make a zero MessageBatch, whose limit of 0 bytes refuses every
// message. Its exported methods (AddMessage, AddAMQPAnnotatedMessage,
// NumBytes, NumMessages) must keep working on a batch azsb returns, because
// application code calls them directly. So azsb:
//
//   - makes new(azservicebus.MessageBatch) and sets its one unexported
//     field maxBytes (uint64) through reflect and unsafe; everything else
//     of the zero batch is what the SDK's own constructor leaves zero;
//   - reads the messages back from its unexported field marshaledMessages
//     ([][]byte, each an AMQP-encoded message, as AddMessage stores it),
//     under the batch's own mu (sync.RWMutex), and decodes them with
//     go-amqp, the SDK's own AMQP library.
//
// This is the least fragile way there is: it names three fields and their
// types, all checked once with reflect before any use (a mismatch makes
// NewMessageBatch and SendMessageBatch return an error, never panic), and
// it relies on the wire format of the messages, which the SDK cannot change
// without breaking Service Bus itself. The alternatives rely on more: a
// //go:linkname to the unexported constructor depends on its name and
// signature and on the linker's tolerance; re-implementing the batch means
// returning a type that is not *azservicebus.MessageBatch. The test
// TestMessageBatchLayout (batch_guard_test.go) fails loudly, naming what
// changed, when an SDK version moves any of it.

// batchLayout is where the fields azsb relies on are, or why they are not.
var batchLayout = sync.OnceValues(func() (layout, error) {
	t := reflect.TypeFor[azservicebus.MessageBatch]()
	var l layout
	for _, f := range []struct {
		name  string
		typ   reflect.Type
		index *[]int
	}{
		{"maxBytes", reflect.TypeFor[uint64](), &l.maxBytes},
		{"marshaledMessages", reflect.TypeFor[[][]byte](), &l.messages},
		{"mu", reflect.TypeFor[sync.RWMutex](), &l.mu},
	} {
		sf, ok := t.FieldByName(f.name)
		if !ok {
			return l, fmt.Errorf("azsb: azservicebus.MessageBatch has no field %s: this SDK version is not supported by azsb's batches (see azsb/batch.go): %w", f.name, minibus.ErrInvalidArgument)
		}
		if sf.Type != f.typ {
			return l, fmt.Errorf("azsb: azservicebus.MessageBatch.%s is a %v, not a %v: this SDK version is not supported by azsb's batches (see azsb/batch.go): %w", f.name, sf.Type, f.typ, minibus.ErrInvalidArgument)
		}
		*f.index = sf.Index
	}
	return l, nil
})

// layout holds the field indices of MessageBatch's fields azsb uses.
type layout struct{ maxBytes, messages, mu []int }

// field returns a pointer to the field at index of b.
func field[T any](b *azservicebus.MessageBatch, index []int) *T {
	return (*T)(unsafe.Pointer(reflect.ValueOf(b).Elem().FieldByIndex(index).UnsafeAddr()))
}

// newBatch returns an empty MessageBatch that takes up to maxBytes, as the
// SDK's newMessageBatch does.
func newBatch(maxBytes uint64) (*azservicebus.MessageBatch, error) {
	l, err := batchLayout()
	if err != nil {
		return nil, err
	}
	b := new(azservicebus.MessageBatch)
	*field[uint64](b, l.maxBytes) = maxBytes
	return b, nil
}

// batchMessages decodes the messages added to b.
func batchMessages(b *azservicebus.MessageBatch) ([]*minibus.Message, error) {
	if b == nil {
		return nil, clientError(minibus.ErrInvalidArgument, "azsb: the message batch is nil")
	}
	l, err := batchLayout()
	if err != nil {
		return nil, err
	}
	mu := field[sync.RWMutex](b, l.mu)
	mu.RLock()
	encoded := append([][]byte(nil), *field[[][]byte](b, l.messages)...)
	mu.RUnlock()
	if len(encoded) == 0 {
		return nil, clientError(minibus.ErrInvalidArgument, "azsb: the message batch is empty")
	}
	out := make([]*minibus.Message, len(encoded))
	for i, enc := range encoded {
		var am amqp.Message
		if err := am.UnmarshalBinary(enc); err != nil {
			return nil, clientError(minibus.ErrInvalidArgument, fmt.Sprintf("azsb: message %d of the batch: %v", i, err))
		}
		m, err := fromAMQP(&am, i)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// maxBatchBytes is the largest batch the service takes, on Premium
// (com.microsoft:max-message-batch-size); on Standard the entity's message
// size, 256 KB, is smaller.
const maxBatchBytes = 1024 * 1024

// NewMessageBatch returns an empty batch for this sender's entity. Its limit
// is options.MaxBytes or, when that is 0, the entity's
// MaxMessageSizeInKilobytes (capped at the service's 1 MB batch limit), as
// the SDK takes it from the link. A missing entity is an
// *azservicebus.Error with CodeNotFound.
func (s *Sender) NewMessageBatch(ctx context.Context, options *azservicebus.MessageBatchOptions) (*azservicebus.MessageBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var kb int64
	err := s.do(func(t target) error {
		var gone bool
		switch t := t.(type) {
		case *minibus.Queue:
			kb, gone = t.Properties().MaxMessageSizeInKilobytes, t.RuntimeProperties().CreatedAt.IsZero()
		case *minibus.Topic:
			kb, gone = t.Properties().MaxMessageSizeInKilobytes, t.RuntimeProperties().CreatedAt.IsZero()
		}
		if gone { // a deleted entity reads zero times
			return fmt.Errorf("azsb: %q: %w", s.name, minibus.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, mapError(err)
	}
	maxBytes := min(uint64(kb)*1024, maxBatchBytes)
	if options != nil && options.MaxBytes != 0 {
		maxBytes = options.MaxBytes
	}
	return newBatch(maxBytes)
}
