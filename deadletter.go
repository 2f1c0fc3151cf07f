package minibus

// Every queue and subscription has a dead-letter queue, read with a
// Receiver whose [ReceiverOptions.SubQueue] is [SubQueueDeadLetter]
// (SEMANTICS D1). Messages get there by [Receiver.DeadLetterMessage], with
// the reason the caller gives, or from the broker, with one of these
// reasons in [ReceivedMessage.DeadLetterReason]. A dead-lettered message
// keeps its body, properties, sequence number, EnqueuedTime and
// DeliveryCount (D2); MaxDeliveryCount and time to live do not apply in a
// dead-letter queue (D3), and its messages cannot be dead-lettered again.
const (
	// DeadLetterReasonMaxDeliveryCountExceeded: the message's lock ended
	// unsettled MaxDeliveryCount times (SEMANTICS L6). Its description reads
	// "Message could not be consumed after N delivery attempts."
	DeadLetterReasonMaxDeliveryCountExceeded = "MaxDeliveryCountExceeded"
	// DeadLetterReasonFilterEvaluation: a rule of the subscription failed to
	// evaluate the message and the subscription has
	// DeadLetteringOnFilterEvaluationExceptions (SEMANTICS R5). The
	// description names the rule and the error.
	DeadLetterReasonFilterEvaluation = "FilterEvaluationException"
	// DeadLetterReasonSessionIDNull: a topic's message without a SessionID
	// selected by the rules of a subscription that requires sessions
	// (SEMANTICS SS1).
	DeadLetterReasonSessionIDNull = "Session id is null."
	// DeadLetterReasonMaxTransferHopCountExceeded: the message would have
	// passed more than 4 forwarding hops; it stays in the dead-letter queue
	// of the entity where it stopped (SEMANTICS F3).
	DeadLetterReasonMaxTransferHopCountExceeded = "MaxTransferHopCountExceeded"
	// DeadLetterReasonTransferFailed: the message could not be forwarded
	// (its destination was deleted, disabled, full or needs a SessionID)
	// and is in the source's transfer dead-letter queue, [SubQueueTransfer]
	// (SEMANTICS F3). The description names the destination and why.
	DeadLetterReasonTransferFailed = "TransferFailed"
)
