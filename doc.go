// Package minibus is an embeddable, in-process message broker with the
// semantics of Azure Service Bus: queues, topics and subscriptions with SQL
// and correlation filters and rule actions, peek-lock and
// receive-and-delete receivers, lock expiry and renewal, MaxDeliveryCount,
// dead-letter queues, deferral, time to live, scheduled messages, sessions,
// duplicate detection, auto-forwarding and auto-delete-on-idle, all driven
// by an injectable clock so that tests can travel in time.
//
// The rules minibus follows are numbered in SEMANTICS.md (T1, L6, E4, …);
// doc comments and tests cite them.
//
// The module is not published yet: use it from a clone of its repository,
// with a go.work file or a replace directive (the README's Install section
// gives the commands).
//
// # Basics
//
// A [Namespace] holds queues and topics. Create one, send, receive and
// settle:
//
//	ns := minibus.NewNamespace()
//	defer ns.Close()
//	q, _ := ns.CreateQueue("orders", nil)
//	_ = q.SendMessage(ctx, &minibus.Message{Body: []byte("hello")}, nil)
//	r, _ := q.NewReceiver(nil) // peek-lock
//	msgs, _ := r.ReceiveMessages(ctx, 10, nil)
//	_ = r.CompleteMessage(ctx, msgs[0], nil)
//
// Names and types follow the Azure SDK for Go (azservicebus and its admin
// package), with plain Go values instead of pointers: the zero value of a
// field means "not set" or "the default". Every call that takes a trailing
// *XxxOptions accepts nil.
//
// A message received in peek-lock mode is locked for the entity's
// LockDuration under a random [ReceivedMessage.LockToken]. Complete removes
// it, Abandon releases it, DeadLetter moves it to the dead-letter queue
// (read it with [ReceiverOptions.SubQueue] set to [SubQueueDeadLetter]),
// Defer sets it aside for [Receiver.ReceiveDeferredMessages]. A lock that
// ends unsettled counts as a failed delivery; after MaxDeliveryCount of
// them the broker dead-letters the message with reason
// MaxDeliveryCountExceeded.
//
// # Topics and subscriptions
//
// A [Topic] copies each message sent to it to every [Subscription] with a
// matching rule ([TrueFilter], [FalseFilter], [CorrelationFilter],
// [SQLFilter], optionally with an [SQLAction] that changes that
// subscription's copy). A subscription receives like a queue: NewReceiver,
// settlement, dead-letter queue and all. Scheduled messages wait in the
// topic and are copied at their time.
//
// # Sessions, duplicate detection and forwarding
//
// A queue or subscription with RequiresSession is read through sessions:
// [Queue.AcceptSession] and [Queue.AcceptNextSession] return a
// [SessionReceiver] that holds one session's lock and sees only its
// messages, in order, with state kept per session. RequiresDuplicateDetection
// drops a resend of a MessageID within the history window. ForwardTo moves
// every message on to another queue or topic, ForwardDeadLetteredMessagesTo
// the dead-lettered ones; what cannot be delivered lands in the source's
// transfer dead-letter queue ([SubQueueTransfer]).
//
// # Processing and testing
//
// A [Processor] runs a [Handler] over a queue's or subscription's messages:
// it completes, dead-letters ([DeadLetterError]) or retries each message,
// renews locks, bounds concurrency and shuts down cleanly.
// [Namespace.WaitIdle] returns once every running processor has nothing
// left to do and no blocked receive has a message there to take, so a test
// waits without sleeping; [WithObserver] sees every
// broker event and [WithFaultInjector] makes chosen calls fail. Package
// minibustest bundles them for tests.
//
// # Durability
//
// [NewNamespace] keeps everything in memory. [Open] returns a namespace
// kept in a directory: every change is appended to a checksummed
// write-ahead log before the call returns, fsynced as [WithSync] says, and
// a later Open of the directory finds the entities, messages, delivery
// counts, session state and duplicate-detection history as they were;
// locks open at a crash have ended (SEMANTICS L6).
//
// # Time and clocks
//
// All time comes from the namespace clock, set with [WithClock]
// (github.com/benbjohnson/clock; the default is the real clock). With a mock
// clock, time moves only when the test moves it, and minibus is exact: when
// any call starts, everything due at or before the clock's now (lock ends,
// expiries, scheduled activations, idle deletions) has already happened, in
// time order. So after mock.Add(6*time.Minute) the next count, peek or
// receive shows precisely the state six minutes later.
//
// minibus never relies on a timer having fired for that: each call catches
// up first. It keeps at most one clock timer per namespace, armed only while
// a receiver is blocked, to wake that receiver when a message becomes
// available through time (a scheduled activation, a lock expiry).
// benbjohnson/clock's Mock.Add runs timer callbacks in new goroutines, so a
// receiver blocked in another goroutine wakes shortly after Add returns, not
// before; a call made after Add needs no such wait.
//
// With the real clock the same rules run in real time, and inside
// testing/synctest's bubble in virtual time: construct and close the
// namespace inside the bubble.
//
// # Concurrency
//
// A Namespace, its handles and its receivers are safe for concurrent use.
// Each entity has one mutex; calls on different queues do not contend. A
// blocked ReceiveMessages returns when a message arrives, when its ctx ends
// (returning ctx.Err() and taking nothing), when its receiver or the
// namespace is closed ([ErrClosed]) or when its entity is deleted
// ([ErrNotFound]). Close leaves no goroutine behind.
//
// # Errors
//
// Every error wraps one of the sentinel errors ([ErrNotFound],
// [ErrInvalidArgument], [ErrLockLost], …): test with [errors.Is]. Its text
// names the entity, message or value at fault. A call that returns an error
// has changed nothing; context errors are returned unchanged.
//
// # Logging
//
// [WithLogger] gives the namespace a log/slog logger: entity lifecycle
// (created, updated, deleted, deleted on idle) at Info, dead-lettering by
// the broker at Debug. The default discards everything.
//
// # How it is built
//
// The root package is the public API only; the broker behind it is in
// internal/engine, whose package documentation gives the layers, how a call
// flows, the lock order and how the durable log replays.
package minibus
