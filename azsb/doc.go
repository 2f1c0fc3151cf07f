// Package azsb gives code written for the Azure SDK for Go's Service Bus
// client (github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus and
// its admin package) a minibus namespace to run against: the application
// keeps its azservicebus types, and only the constructor differs. azsb's
// Client, Sender and Receiver are types of their own with the SDK's
// methods, so the code must hold them through interfaces over the SDK's
// types (as a service does to test itself; see "What azsb is"): code that
// names *azservicebus.Client or *azservicebus.Sender in its own signatures
// cannot take azsb's.
//
//	ns := minibus.NewNamespace()              // in tests, with minibus.WithClock(mock)
//	client := azsb.NewClient(ns)              // instead of azservicebus.NewClient(...)
//	adminClient := azsb.NewAdminClient(ns)    // instead of admin.NewClient(...)
//
//	sender, _ := client.NewSender("orders", nil)
//	err := sender.SendMessage(ctx, &azservicebus.Message{Body: []byte("hi")}, nil)
//	receiver, _ := client.NewReceiverForQueue("orders", nil)
//	msgs, _ := receiver.ReceiveMessages(ctx, 10, nil) // []*azservicebus.ReceivedMessage
//
// azsb is a module of its own (github.com/minibus-go/minibus/azsb), so that
// importing minibus never pulls in the Azure SDK.
//
// # What azsb is
//
// [Client], [Sender], [Receiver], [SessionReceiver] and [AdminClient] have
// the methods of *azservicebus.Client, *azservicebus.Sender,
// *azservicebus.Receiver, *azservicebus.SessionReceiver and *admin.Client
// with the SDK's own types in every signature (*azservicebus.Message,
// *azservicebus.ReceivedMessage, *azservicebus.MessageBatch, every options
// and response struct, *runtime.Pager). An interface an application declares
// over the SDK's types is satisfied by azsb's, so the same code is served by
// minibus in tests and by Azure Service Bus in production. The tests check
// this at compile time and, by reflection, that no method of the SDK is
// missing.
//
// # What is faithful
//
//   - Messages, both ways: every field of Message and ReceivedMessage, with
//     nil pointers for unset fields; LockToken, LockedUntil (updated by
//     RenewMessageLock), SequenceNumber, EnqueuedTime, ExpiresAt,
//     DeliveryCount (1 on the first delivery), State, ScheduledEnqueueTime;
//     DeadLetterReason and DeadLetterErrorDescription on messages of a
//     dead-letter queue, also in ApplicationProperties where the SDK reads
//     them; ReceivedMessage.Message() forwards a received message; every
//     received message has its RawAMQPMessage, with the service's message
//     annotations (x-opt-sequence-number, x-opt-enqueued-time,
//     x-opt-locked-until, …). Application property values come back with
//     AMQP's types (int as int64, uint as uint64); a type AMQP cannot carry
//     is refused, as the SDK's encoder refuses it.
//
//   - AMQP messages: SendAMQPAnnotatedMessage and batches keep Value and
//     Sequence bodies, several data sections, custom message annotations,
//     non-string message ids, footers, durable and priority, and give them
//     back in RawAMQPMessage. minibus has no field for these: azsb keeps
//     them AMQP-encoded in one application property, "$azsb.amqp", which
//     azsb's receivers remove (a plain minibus receiver of the same entity
//     sees it).
//
//   - Behaviour: everything minibus does (SEMANTICS.md in the minibus
//     repository), plus the SDK's own: senders and receivers open nothing
//     until their first call (a missing entity is then an error with
//     CodeNotFound) and find an entity again after it was deleted and
//     created anew; ReceiveMessages refuses maxMessages outside 1..5000 and
//     a second concurrent call; peeking continues after the last peeked
//     message unless FromSequenceNumber is given; ScheduleMessages and
//     batches give messages without a MessageID a random UUID; a
//     receive-and-delete receiver cannot settle; a message rebuilt from its
//     LockToken alone settles and renews.
//
// # Errors
//
// Where the SDK returns an *azservicebus.Error, errors.As finds one with the
// same Code; elsewhere azsb returns what the SDK returns
// (azservicebus.ErrMessageTooLarge, the service's *amqp.Error, context
// errors unchanged); and errors.Is still finds the minibus sentinel:
//
//	minibus                       SDK
//	ErrLockLost                   *azservicebus.Error, CodeLockLost
//	ErrSessionLockLost            *azservicebus.Error, CodeLockLost
//	ErrNotFound                   *azservicebus.Error, CodeNotFound
//	ErrMessageNotFound            *azservicebus.Error, CodeNotFound (the service's 404)
//	ErrClosed                     *azservicebus.Error, CodeClosed
//	ErrMessageTooLarge            azservicebus.ErrMessageTooLarge and *amqp.Error amqp:link:message-size-exceeded
//	ErrQuotaExceeded              *amqp.Error amqp:resource-limit-exceeded
//	ErrEntityDisabled             *amqp.Error com.microsoft:entity-disabled
//	ErrSessionCannotBeLocked      *amqp.Error com.microsoft:session-cannot-be-locked
//	no SessionID, session queue   *amqp.Error amqp:not-allowed, with the service's text
//	plain receiver, session queue *amqp.Error amqp:not-allowed, with the service's text
//	Accept…Session…, no sessions  *amqp.Error amqp:not-allowed, with the service's text
//	AcceptNextSession times out   *azservicebus.Error, CodeTimeout (no context error)
//	list sessions, no sessions    *azservicebus.Error, CodeConnectionLost (see Sessions)
//	list sessions, missing entity *azservicebus.Error, CodeNotFound (the service's 404)
//	context errors                unchanged, not wrapped
//
// Errors the SDK makes itself, before calling the service ("maxMessages
// should be greater than 0", "client has been closed by user", …) have the
// SDK's text and wrap minibus.ErrInvalidArgument or minibus.ErrClosed. A
// caller that compares with == (err == azservicebus.ErrMessageTooLarge) or
// asserts the type (err.(*azservicebus.Error)) sees the difference; use
// errors.Is and errors.As, as the SDK's documentation does. The
// *azservicebus.Error azsb gives has its Code only (its message is
// unexported in the SDK); the error's own text, "(code): detail", carries
// minibus's detail.
//
// The admin client reports the service's HTTP answers as an
// *azcore.ResponseError: 404 for a missing entity or rule, 409 for a name
// taken, 400 for a property minibus refuses; Get and GetRuntimeProperties of
// a missing entity return nil and no error.
//
// # What is ignored
//
// Options minibus cannot honour are accepted and ignored, never a panic:
// azservicebus.ClientOptions (a custom endpoint, TLS configuration, web
// sockets, an application id, retry options) and admin.ClientOptions (API
// version, retries, transport, logging), both passed as NewClient's and
// NewAdminClient's optional last argument, where the SDK's constructors
// take them; ReceiveMessagesOptions.TimeAfterFirstMessage (minibus
// hands over what is available at once, so there is nothing to wait for);
// and ListSessionsOptions.SessionStateUpdatedAfter (minibus keeps no time
// of a session state's last update, so the pagers list every session with
// messages or state, as without the option).
// The admin properties minibus has no use
// for (EnableBatchedOperations, EnablePartitioning, SupportOrdering,
// UserMetadata, AuthorizationRules) are kept and returned as set.
// Calls the SDK panics on (a nil message, a nil or empty batch, CreateRule
// with nil options) return an error or, for CreateRule, create "$Default".
//
// Differences that remain: instants are minibus's exact ones (nanoseconds
// on the namespace clock, not the wire's milliseconds); TimeToLive and
// ExpiresAt are nil for a message that never expires; a *string field set
// to "" reads back nil, and a SessionID of "" is no session, as minibus
// has no other "unset" (see Sessions for the session id ""); UpdateRule
// deletes and recreates the rule, so a message sent during the call may
// miss it.
//
// # Message batches
//
// *azservicebus.MessageBatch has an unexported size limit and constructor,
// and its AddMessage must work as the SDK's because application code calls
// it. NewMessageBatch makes a new(azservicebus.MessageBatch) and sets its
// unexported maxBytes field through reflect and unsafe; SendMessageBatch
// reads its unexported marshaledMessages (AMQP-encoded messages, under the
// batch's own mutex) and decodes them with go-amqp. The three fields and
// their types are checked once before use: an SDK that changes them makes
// these two calls return an error, never panic, and TestMessageBatchLayout
// fails naming the change. The limit is MessageBatchOptions.MaxBytes or the
// entity's MaxMessageSizeInKilobytes (at most 1 MB), as the SDK takes it
// from the link.
//
// # Sessions
//
// Session-enabled queues and subscriptions (RequiresSession) work as
// minibus's sessions do (SEMANTICS SS1–SS8): every message sent to one
// needs a SessionID, and a plain receiver is refused (its dead-letter
// queue is read with a plain receiver). AcceptSessionForQueue and
// AcceptSessionForSubscription lock a named session, with or without
// messages; AcceptNextSessionForQueue and AcceptNextSessionForSubscription
// wait for a session that no receiver holds and that has a message
// available, take the one whose first available message is oldest, and
// answer CodeTimeout when none comes before ctx's deadline or, without
// one, within the minute the service waits, on the namespace clock (a
// mock moved a minute ends it). A SessionReceiver gets its
// session's messages in order, each locked as long as the session;
// RenewSessionLock renews them all and moves LockedUntil, which otherwise
// stays as it was at accept, as the SDK's does; GetSessionState and
// SetSessionState copy the bytes, and the state outlives the receiver. A
// message received by another open session receiver, of any client, is
// settled through that receiver, as the SDK settles a message on the link
// that received it. NewListSessionsForQueuePager and
// NewListSessionsForSubscriptionPager list the ids of the sessions with
// messages (available, locked or deferred) or state, sorted, in the SDK's
// pages of 100.
//
// What differs:
//
//   - A lost session lock is final: every later call on the receiver is
//     an *azservicebus.Error with CodeLockLost (minibus.ErrSessionLockLost),
//     and the session's locked messages are delivered again. The SDK's
//     session receiver treats a lost session lock as a link fault and
//     retries, re-attaching its link to the same session id, which can
//     lock the session anew when no other receiver holds it.
//   - ListSessionsOptions.SessionStateUpdatedAfter is ignored (see What is
//     ignored).
//   - Listing the sessions of an entity without sessions: the service
//     refuses the request, and the SDK v1.11, which retries a management
//     answer with a status other than 401, 404, 408, 410, 500 and 503 as a
//     connection fault, gives up after its retries with CodeConnectionLost.
//     azsb gives that error at once, wrapping minibus.ErrInvalidArgument.
//   - The session id "": the SDK accepts it; minibus refuses to accept it
//     (an error wrapping minibus.ErrInvalidArgument), because a message
//     whose SessionID is "" has no session and a session-enabled entity
//     refuses it (amqp:not-allowed): that session could never have one.
package azsb
