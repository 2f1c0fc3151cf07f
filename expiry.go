package minibus

// A message's time to live is the smallest of its own
// [Message.TimeToLive], its entity's DefaultMessageTimeToLive and, in a
// subscription, its topic's (SEMANTICS E1); [ReceivedMessage.ExpiresAt] is
// its EnqueuedTime plus that (E2), zero when it never expires. An expired
// message is never received, peeked or counted (E3); a locked one does not
// expire until its lock ends (E4); deferred messages and those in a
// dead-letter queue never expire (E6, E7). With
// DeadLetteringOnMessageExpiration an expired message moves to the
// dead-letter queue with this reason and description; otherwise it is
// dropped (E5).
const (
	// DeadLetterReasonTTLExpired is the DeadLetterReason of an expired
	// message (SEMANTICS E5).
	DeadLetterReasonTTLExpired = "TTLExpiredException"
	// DeadLetterDescriptionTTLExpired is its DeadLetterErrorDescription.
	DeadLetterDescriptionTTLExpired = "The message expired and was dead lettered."
)
