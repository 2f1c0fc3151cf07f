package minibus

import (
	"testing"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/stretchr/testify/require"
)

// The exported dead-letter reasons are literal strings, so that go doc
// shows them; the engine sets its own constants. Each pair must agree
// (SEMANTICS L6, E5, R5, SS1, F3).
func TestDeadLetterReasonsMirrorTheEngine(t *testing.T) {
	for _, c := range []struct{ public, engine string }{
		{DeadLetterReasonMaxDeliveryCountExceeded, engine.ReasonMaxDelivery},
		{DeadLetterReasonFilterEvaluation, engine.ReasonFilterEvaluation},
		{DeadLetterReasonTTLExpired, engine.ReasonTTLExpired},
		{DeadLetterDescriptionTTLExpired, engine.DescriptionTTLExpired},
		{DeadLetterReasonSessionIDNull, engine.ReasonSessionIDNull},
		{DeadLetterReasonMaxTransferHopCountExceeded, engine.ReasonMaxHops},
		{DeadLetterReasonTransferFailed, engine.ReasonTransferFailed},
	} {
		require.Equal(t, c.engine, c.public)
	}
}
