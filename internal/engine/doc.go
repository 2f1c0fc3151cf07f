// Package engine is the broker behind minibus's public API: entities and
// their one mutex each, every transition of a message, fan-out from topics
// to subscriptions, the catch-up that makes time exact, the one timer, and
// blocked receivers. It has its own vocabulary (Entity, Config, Kind,
// Status, Mode, Receiver, Settlement) and never imports the root package;
// the root maps its public types onto these, checks what callers pass, and
// copies messages in and out (SEMANTICS V4). Messages are store.Message
// records in each entity's store.Store.
//
// This is where minibus's maintainer notes live; the root package's
// documentation is for its users.
//
// # Layout
//
// The folders are the layers; each imports only those below it:
//
//	minibus/                 the public API: handles, options, validation,
//	                         copies at the boundary (SEMANTICS V4), docs
//	internal/engine/         the broker: entities and their mutexes, every
//	                         message transition (transitions.go), topic
//	                         fan-out, catch-up and the one timer, blocked
//	                         receivers
//	internal/store/          one entity's messages: btree indexes, the
//	                         arena, the list of locks, the deadline index,
//	                         recycled records, the byte quota
//	internal/wal/            the write-ahead log of a durable namespace:
//	                         segments, checksummed records, group commit,
//	                         snapshots, and a file system that can crash
//	internal/sqlfilter/      the SQL filter and action language, and
//	                         correlation filters
//	internal/errs/           the sentinel errors the root re-exports
//	internal/modeltest/      the reference model of the model-based test
//	minibustest/             the test environment built on the root
//	azsb/, bench/            modules of their own: the Azure SDK's types
//	                         over the root, and the benchmarks against
//	                         other brokers
//
// # The files, from the ground up
//
// Each file uses mostly the files below it:
//
//	vocabulary.go          the values the root maps its types onto: Kind,
//	                       Status, Config, Mode, Op, Settlement,
//	                       Operation, EventKind, Event, RuleSpec
//	time.go, codec.go      instants; the bytes of records and snapshots
//	broker.go              the broker's state: events, scheduler,
//	                       quiescence, journal, outbox
//	events.go              the observer's lanes
//	entity.go              what an entity, a receiver and a session hold
//	call.go                the frame of every exported call
//	dedup.go, wait.go,     duplicate detection, blocked receivers' lists,
//	quiet.go               quiescence (WaitQuiet)
//	record.go, journal.go  one type per journaled record, and a record's
//	                       life (begin, check, commit); the journal
//	processor.go           the processors' hooks
//	topic.go               rules and a topic's subscriptions
//	transitions.go         every change of a message's or an entity's state
//	settle.go, session.go  a receiver's settlements; sessions
//	fanout.go              a topic's copies of a message
//	catchup.go             time made exact: the catch-up and the one timer
//	send.go, receive.go    sending, receiving, peeking
//	forward.go             auto-forwarding (the outbox)
//	snapshot.go            a durable checkpoint
//	replay.go, manage.go   recovery; a namespace's life and its entities':
//	                       New, Close, Create, Find, Delete, Names,
//	                       Update, Counts
//
// A record's apply names the transition it replays and the transition
// names its record, so record.go and each file that logs use each other:
// that circle is the price of a record's encode, decode and apply side by
// side.
//
// # How a call flows
//
// The root checks a call's arguments and copies the caller's messages into
// store records. Every exported engine call then comes in through one
// frame, a call (call.go), a value on its stack: its entry asks the fault
// injectors, checks ctx, the broker and the receiver, reads the clock and
// catches up (catchup.go), so that everything in the namespace due at or
// before now happens first, in time order (SEMANTICS T3), then enters its
// entity (takes its mutex) and checks its status. The call applies one or
// more transitions (transitions.go); its exit leaves the entity, delivers
// what it forwarded, hands its events to the observer and waits for its
// records to be durable. A receive returns views (store.View) of the
// messages it took, pinned, which the root copies into the caller's
// messages outside every mutex and releases.
//
// # Words
//
// One word, one meaning:
//   - lock: a Service Bus lock, a message's peek-lock or a session's lock;
//     ByToken finds a message by its lock token. A mutex is entered and
//     left (call.enter, call.leave, enterSubsLocked, leaveAll); the suffix
//     Locked alone keeps Go's sense: its caller holds the entity's mutex.
//   - snapshot: a durable checkpoint (snapshot.go); a pinned read copy of a
//     message is a view (store.View).
//   - idle: auto-delete-on-idle (SEMANTICS A1 to A4); a namespace with
//     nothing left to do is quiet, and WaitQuiet waits for quiescence
//     (quiet.go, SEMANTICS P1 to P3).
//   - store: one entity's messages (internal/store); the root's Open, which
//     makes a durable namespace, lives in open.go.
//
// # Mutex order
//
// Broker.mu, then a topic's Entity.mu, then its subscriptions' mutexes in
// their order (a queue's mutex stands alone), then the scheduler's
// mutexes: sched.timerMu, then sched.mu, then the clock's own. The
// catch-up mutex (sched.catchMu) is taken with no other mutex held. A
// Receiver has no mutex of its own: its fields are guarded by its entity's
// mutex or are atomic. The events' mutex (events.mu) and the outbox's
// (outbox.mu) are leaves; outbox.flushMu is taken with no entity's mutex
// held.
//
// # Invariants
//
// The engine's own ordering rules, numbered as SEMANTICS numbers the
// broker's; the code cites them where it keeps them:
//
//   - I1. A record is appended while the mutex of the entity it changes is
//     held, so log order is state order (Entity.commit).
//   - I2. A call's record is built, and checked against the journal's
//     limit, before the state changes (SEMANTICS V3): on error nothing has
//     changed; a record whose transition fails is dropped (Entity.begin).
//   - I3. A transition reads no clock: it takes its instant as an
//     argument, so that replay applies the same method at the same instant
//     (transitions.go, record.go).
//   - I4. An entity's instants never go back: a call acts at the later of
//     its clock reading and the entity's latest instant (call.enter,
//     Entity.instant).
//   - I5. Before a call acts at now, everything in the namespace due at or
//     before now has happened, in time order, an instant at a time, whole
//     (SEMANTICS T3; catchup.go).
//   - I6. The scheduler's bound for an entity is never later than the
//     entity's earliest deadline; earlier only costs a look (catchup.go).
//   - I7. A forward leaves the outbox's set of messages in flight in the
//     step its landing record is appended, under the outbox's mutex: a
//     snapshot finds it on its way or landed, never both nor neither
//     (Entity.commit, forward.go).
//   - I8. Events are pushed in state order under the entity's mutex and
//     handed to the observer in that order, outside every mutex; a call
//     returns once the events it pushed are observed (events.go).
//   - I9. A call that changes or shows state returns only once its records
//     are as durable as the journal promises; a nil error becomes
//     ErrStoreFailed when they are not (call.exit).
//   - I10. No mutex is held while a caller's code runs, while the observer
//     runs, or while a call blocks on a channel (call.leave, Broker.wait).
//   - I11. A snapshot is written only after every record it covers is on
//     disk (snapshot.go).
//
// # Durability
//
// The durable state of a namespace is its entity definitions (Create,
// Update, Delete), the messages accepted with their sequence numbers, and
// their state changes: delivery counts, deferral, dead-lettering with a
// reason, activation with a new number, and removal. Every one of those
// changes is a method in transitions.go (and Create, Update and Delete), and
// each takes what it needs as arguments, the instant included, reading no
// clock. A durable broker has a Journal (journal.go): each transition
// appends one record while the entity's mutex is held, so log order is state
// order, and each exported call ends by waiting until its records are as
// durable as the log promises. A record is a value of one small type per
// kind (record.go), which holds its fields, encodes and decodes them and
// applies them at replay, side by side: the transition says what happened,
// e.log(r.kind(), r.encode) with r on its stack, which costs nothing
// without a journal; a call whose record grows with its caller's data
// builds it first (begin), checks its size (SEMANTICS V3), and commits or
// drops it. A snapshot (snapshot.go) holds each entity's state as an
// entityState, with its encode, decode and apply side by side in the same
// way. Recover (replay.go) rebuilds a broker from the newest snapshot and
// the records after it: it decodes each record's kind and applies it,
// through the same methods the live call used. A new
// journaled fact is a kind and a type in record.go, and the line of the
// transition that logs it; testdata/records at the root holds a log of
// every kind written before, which must keep opening (record_test.go
// checks its bytes). Locks are not durable: at recovery every lock has
// ended (SEMANTICS L6), and the catch-up then runs at the clock's now, as
// after a jump of a mock clock.
package engine
